"""Secret redaction: built-in token rules by family, keyed syntaxes, entropy fallback, evaluation on
labelled sets.
"""

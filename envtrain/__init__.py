"""envtrain: executable tool-use environments with programmatic verifiers, scaled and trained on.

Importing envtrain pulls in no GPU or service dependency; those load where they are used.
"""

__version__ = "0.1.0"

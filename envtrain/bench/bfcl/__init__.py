"""BFCL v4 multi-turn: the benchmark as BFCL runs and grades it (``adapter``), and its tasks as
envtrain environments (``env``). Imports ``bfcl_eval`` only where it is used."""

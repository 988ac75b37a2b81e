"""Generated tool code (EnvCraft): the answer format and document (``document``), Table 15 read
statically (``rules``) and checked by running the code in a sandbox (``probe``)."""

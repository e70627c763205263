# Step 5, claims: every claim of an experiment (or of a claims-only file) evaluated over
# the tidy results into holds / differs / not comparable here / not run / not checkable
# (the runs' summaries give the cores the premise rules weigh).

rule claims:
    input:
        own=lambda wc: [results_csv(wc.scale, wc.experiment)] if wc.experiment in SPECS else [],
        others=lambda wc: [results_csv(wc.scale, e) for e in claim_sources(wc.experiment)],
        runs=lambda wc: [runs_json(wc.scale, wc.experiment)] if wc.experiment in SPECS else [],
        spec=lambda wc: spec_file(wc.experiment),
        code=code("results/claims.py", "spec/claimlang.py", "results/verdicts.py", "spec/substitutions.py"),
    output:
        f"{RESULTS}/{{scale}}/verdicts/{{experiment}}.csv",
    log:
        f"{RESULTS}/{{scale}}/logs/claims/{{experiment}}.log",
    run:
        step_claims(wildcards, input, output, log)

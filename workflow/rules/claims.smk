# Step 5, claims: every claim of an experiment (or of a claims-only file) evaluated over
# the tidy results into holds / differs / not run / not checkable.

rule claims:
    input:
        own=lambda wc: [results_csv(wc.scale, wc.experiment)] if wc.experiment in SPECS else [],
        others=lambda wc: [results_csv(wc.scale, e) for e in claim_sources(wc.experiment)],
        spec=lambda wc: spec_file(wc.experiment),
        code=code("claims.py"),
    output:
        f"{RESULTS}/{{scale}}/verdicts/{{experiment}}.csv",
    log:
        f"{RESULTS}/{{scale}}/logs/claims/{{experiment}}.log",
    run:
        step_claims(wildcards, input, output, log)

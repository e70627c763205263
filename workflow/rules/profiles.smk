# Step 5b, profiles: the points of one experiment run on both profiles, the modern profile's
# software (runs_dir) and the papers' releases (paper_runs_dir, the paper profile's runs), their
# values side by side for the report (`dlobd compare-profiles`). Only for the experiments the
# paper profile ran; one job each, so a changed run compares its experiment again, not all.


rule profiles:
    input:
        # the modern side's chosen attempts change with its runs' summaries
        modern=lambda wc: runs_json(wc.scale, wc.experiment),
        paper=lambda wc: PAPER_RECORDS[(wc.scale, wc.experiment)],
        code=code("results/compareprofiles.py", "results/comparepaths.py"),
    output:
        f"{RESULTS}/{{scale}}/profiles/{{experiment}}.csv",
    log:
        f"{RESULTS}/{{scale}}/logs/profiles/{{experiment}}.log",
    run:
        step_profiles(wildcards, output, log)

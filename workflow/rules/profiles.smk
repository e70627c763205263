# Step 5b, profiles: the points run on both profiles, the modern profile's software (runs_dir)
# and the papers' releases (paper_runs_dir, the paper profile's runs), their values side by side
# for the report (`dlobd compare-profiles`). Only with paper_runs_dir set.


rule profiles:
    input:
        # the modern side's chosen attempts change with its runs' summaries
        modern=[runs_json(s, e) for s in SCALES for e in DATA_IDS],
        paper=paper_run_records,
        code=code("results/compareprofiles.py", "results/comparepaths.py"),
    output:
        profiles_csv(),
    log:
        f"{RESULTS}/logs/profiles.log",
    run:
        step_profiles(output, log)

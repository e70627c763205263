# Step 3, results: the parsed points of one experiment into its tidy table
# (docs/runs-and-results.md) and a summary of every run's run.json for the report.


rule results:
    input:
        parsed=lambda wc: [parsed_csv(wc.scale, c, wc.experiment, p) for c, p in all_points(wc.scale, wc.experiment)],
        spec=lambda wc: spec_file(wc.experiment),
        code=code("results/tidy.py"),
    output:
        csv=f"{RESULTS}/{{scale}}/{{experiment}}.csv",
        runs=f"{RESULTS}/{{scale}}/runs/{{experiment}}.json",
    log:
        f"{RESULTS}/{{scale}}/logs/results/{{experiment}}.log",
    run:
        step_results(wildcards, input, output, log)

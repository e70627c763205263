# Steps 2 and 3, parse and results: the chosen attempt of each point of one experiment (newest
# ok, else newest) through its stack's parser into tidy rows, those into the experiment's tidy
# table (docs/runs-and-results.md), and a summary of every run's run.json for the report. One job
# per experiment: a job per point cost Snakemake more than the parsing, and its points' rows go
# into the table in memory (a file of each point's rows, written and read back, cost a third of the step).
# Reads raw logs, never writes under RUNS.


rule results:
    # first: while a job waits, Snakemake's scheduler stats its inputs (here every raw file) at
    # each of its many passes, so the jobs with many inputs should not wait
    priority: 10
    input:
        launched=launched_markers,
        raw=raw_inputs,
        spec=lambda wc: spec_file(wc.experiment),
        code=parser_code,
    output:
        csv=f"{RESULTS}/{{scale}}/{{experiment}}.csv",
        runs=f"{RESULTS}/{{scale}}/runs/{{experiment}}.json",
    log:
        f"{RESULTS}/{{scale}}/logs/results/{{experiment}}.log",
    run:
        step_results(wildcards, input, output, log)

# Step 6, report: one self-contained HTML page with every figure, the verdict table and
# the provenance of every run. Reads results, figures and verdicts only.


rule report:
    input:
        figures=expand(f"{FIGURES}/{{scale}}/{{experiment}}.png", scale=SCALES, experiment=IDS),
        utilisation=expand(f"{FIGURES}/{{scale}}/utilisation/{{experiment}}.png", scale=SCALES,
                           experiment=DATA_IDS),
        verdicts=expand(f"{RESULTS}/{{scale}}/verdicts/{{experiment}}.csv", scale=SCALES,
                        experiment=VERDICT_IDS),
        results=[results_csv(s, e) for s in SCALES for e in DATA_IDS],
        runs=[runs_json(s, e) for s in SCALES for e in DATA_IDS],
        code=code("report.py", "templates/report.html.j2", "figures.py"),
    output:
        html=report_html(),
    log:
        f"{REPORT}/report.log",
    run:
        step_report(output, log)

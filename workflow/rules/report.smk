# Step 6, report: an index page (summary, verdict table, a thumbnail per experiment) and a
# page per experiment with its figure, claims and the provenance of every run; the figures
# are linked, not inlined. Reads results, figures and verdicts only.


rule report:
    input:
        figures=expand(f"{FIGURES}/{{scale}}/{{experiment}}.png", scale=SCALES, experiment=IDS),
        utilisation=expand(f"{FIGURES}/{{scale}}/utilisation/{{experiment}}.png", scale=SCALES,
                           experiment=DATA_IDS),
        verdicts=expand(f"{RESULTS}/{{scale}}/verdicts/{{experiment}}.csv", scale=SCALES,
                        experiment=VERDICT_IDS),
        results=[results_csv(s, e) for s in SCALES for e in DATA_IDS],
        runs=[runs_json(s, e) for s in SCALES for e in DATA_IDS],
        profiles=[profiles_csv(*key) for key in sorted(PAPER_RECORDS)],
        # linked from each experiment's page when built (pdf: true)
        pdfs=expand(f"{FIGURES}/{{scale}}/{{experiment}}.pdf", scale=SCALES, experiment=IDS)
        if config["pdf"] else [],
        code=code("results/report.py", "results/templates/base.html.j2", "results/templates/index.html.j2",
                  "results/templates/experiment.html.j2", "results/figures.py"),
    output:
        html=report_html(),
        # one output for the pages, not one per page: Snakemake's metadata of every output holds
        # the checksum of every input, 56 x 250 files hashed after each report
        pages=directory(f"{REPORT}/experiments"),
    log:
        f"{REPORT}/report.log",
    run:
        step_report(input, output, log)

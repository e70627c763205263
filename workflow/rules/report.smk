# Step 6, report: an index page (summary, verdict table, a thumbnail per experiment) and a
# page per experiment with its figure, claims and the provenance of every run. The figures are
# linked, not inlined, and not read: the report is written beside the drawing, not after it
# (the `all` rule asks for the figures). Reads results, verdicts and the profiles' tables.


rule report:
    input:
        verdicts=expand(f"{RESULTS}/{{scale}}/verdicts/{{experiment}}.csv", scale=SCALES,
                        experiment=VERDICT_IDS),
        results=[results_csv(s, e) for s in SCALES for e in DATA_IDS],
        runs=[runs_json(s, e) for s in SCALES for e in DATA_IDS],
        profiles=[profiles_csv(*key) for key in sorted(PAPER_RECORDS)],
        code=code("results/report.py", "results/templates/base.html.j2", "results/templates/index.html.j2",
                  "results/templates/experiment.html.j2", "results/templates/verdict.html.j2",
                  "results/expected.py", "spec/substitutions.py"),
    params:
        # each page links its figure's PDF when this run draws them (pdf: true); a change of it
        # writes the pages again (Snakemake's params trigger)
        pdfs=config["pdf"],
    output:
        html=f"{REPORT}/index.html",
        # one output for the pages, not one per page: Snakemake's metadata of every output holds
        # the checksum of every input: 56 x 160 files hashed after each report
        pages=directory(f"{REPORT}/experiments"),
    log:
        f"{REPORT}/report.log",
    run:
        step_report(input, output, params, log)


rule report_figures:
    """The figures of one scale, hard-linked (across file systems copied) into the report's own
    folder, which its pages link, so that the report folder can be sent alone. A job of its own
    after the drawing, so that the pages are still written beside it."""
    input:
        lambda wc: [f"{FIGURES}/{wc.scale}/{e}.png" for e in IDS]
        + [f"{FIGURES}/{wc.scale}/utilisation/{e}.png" for e in DATA_IDS]
        + ([f"{FIGURES}/{wc.scale}/{e}.pdf" for e in IDS] if config["pdf"] else []),
    output:
        directory(f"{REPORT}/figures/{{scale}}"),
    log:
        f"{REPORT}/figures-{{scale}}.log",
    run:
        from dlobd.results import report as dreport

        Path(log[0]).write_text(dreport.hold_figures(input, f"{FIGURES}/{wildcards.scale}", output[0]) + "\n")


localrules:
    report_figures,

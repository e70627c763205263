# Step 4, figure: one experiment drawn in its spec's plot form, PNG and PDF. An
# experiment without ok results gets a figure that says why it was not run.


rule figure:
    input:
        csv=lambda wc: results_csv(wc.scale, wc.experiment),
        spec=lambda wc: spec_file(wc.experiment),
        code=code("results/figures.py"),
    output:
        png=report(
            f"{FIGURES}/{{scale}}/{{experiment}}.png",
            caption="../report/figure.rst",
            category="{scale}",
            subcategory=lambda wc: SPECS[wc.experiment].data["paper"],
            labels=lambda wc: {"experiment": wc.experiment,
                               "figure": SPECS[wc.experiment].data["figure"]},
        ),
        pdf=f"{FIGURES}/{{scale}}/{{experiment}}.pdf",
    log:
        f"{RESULTS}/{{scale}}/logs/figure/{{experiment}}.log",
    run:
        step_figure(wildcards, input, output, log)


rule utilisation:
    """CPU, memory and network over time of an experiment's runs (dlobd-fig8 style)."""
    input:
        csv=lambda wc: results_csv(wc.scale, wc.experiment),
        code=code("results/figures.py"),
    output:
        png=f"{FIGURES}/{{scale}}/utilisation/{{experiment}}.png",
    log:
        f"{RESULTS}/{{scale}}/logs/utilisation/{{experiment}}.log",
    run:
        step_utilisation(wildcards, input, output, log)

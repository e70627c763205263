# Step 4, figure: one experiment drawn in its spec's plot form, a PNG for the report (and a PDF
# for print, with `pdf: true`). An experiment without ok results gets a figure that says why it
# was not run. The drawing runs in the figure pool's processes (common.smk, figure_pool), so
# a drawing job holds none of Snakemake's cores (threads 0), but one unit of `drawing`, which
# the profile sets to the pool's size.


# the figures package's modules each figure kind draws with (its __init__ draws every kind)
FIGURE_CODE = [f"results/figures/{m}.py" for m in ("__init__", "values", "labels", "layout")]
# what a figure is drawn from, as PNG or PDF
FIGURE_INPUT = {
    "csv": lambda wc: results_csv(wc.scale, wc.experiment),
    "spec": lambda wc: spec_file(wc.experiment),
    "code": code(*FIGURE_CODE, "results/figures/paper.py", "results/figures/forms.py"),
}


rule figure:
    threads: 0
    resources:
        drawing=1,
    input:
        **FIGURE_INPUT,
    output:
        png=report(
            f"{FIGURES}/{{scale}}/{{experiment}}.png",
            caption="../report/figure.rst",
            category="{scale}",
            subcategory=lambda wc: SPECS[wc.experiment].data["paper"],
            labels=lambda wc: {"experiment": wc.experiment,
                               "figure": SPECS[wc.experiment].data["figure"]},
        ),
    log:
        f"{RESULTS}/{{scale}}/logs/figure/{{experiment}}.log",
    run:
        step_figure(wildcards, input, output, log)


rule figure_pdf:
    """The same figure as a vector PDF, built only when asked for (`make figures-pdf`): saving
    it costs as much as drawing the PNG again."""
    threads: 0
    resources:
        drawing=1,
    input:
        **FIGURE_INPUT,
    output:
        pdf=f"{FIGURES}/{{scale}}/{{experiment}}.pdf",
    log:
        f"{RESULTS}/{{scale}}/logs/figure_pdf/{{experiment}}.log",
    run:
        step_figure(wildcards, input, output, log)


rule utilisation:
    """CPU, memory and network over time of an experiment's runs (dlobd-fig8 style)."""
    threads: 0
    resources:
        drawing=1,
    input:
        csv=lambda wc: results_csv(wc.scale, wc.experiment),
        code=code(*FIGURE_CODE, "results/figures/utilisation.py"),
    output:
        png=f"{FIGURES}/{{scale}}/utilisation/{{experiment}}.png",
    log:
        f"{RESULTS}/{{scale}}/logs/utilisation/{{experiment}}.log",
    run:
        step_utilisation(wildcards, input, output, log)

# The DLoBD pipeline: run -> parse -> results -> figure -> claims -> report (docs/design.md, Flow).
# `make figures` runs it over whatever raw logs exist; `python -m snakemake --profile
# profiles/local` does the same by hand (the `snakemake` script too, its figures drawn half a
# second later: workflow/rules/common.smk, figure_pool). Rules live in workflow/rules/, one file
# per step.

import gc

from snakemake.utils import min_version, validate

min_version("8.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


# Snakemake's command line always limits job starts (100/1s unless told otherwise), and with a
# limit each scheduler pass starts a timer for one more pass: passes pile up with every finished
# job, each statting the inputs of every waiting job, and kept a core busy for most of a cold
# `make figures`. Jobs run as threads of this process (profiles/local) need no limit; the
# scheduler exists only once the DAG is built, hence here. A batch system's executor keeps it.
onstart:
    if workflow.local_exec and workflow.execution_settings.use_threads:
        workflow.scheduler.job_rate_limiter = None


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


# The figure pool's server imports matplotlib for most of a second: started now, it does so while
# Snakemake reads the other rules and builds the DAG, not after them (at onstart), and a redraw's
# drawing starts that much sooner. A Snakefile cannot tell yet whether any job will run, so
# a run with nothing to do, --lint or --summary start it as well: it exits with Snakemake, and no
# one waits for it (dlobd/results/drawingserver.py). Dry runs and jobs run on other hosts don't.
if workflow.is_main_process and not workflow.output_settings.dryrun:
    start_figure_pool()


include: "workflow/rules/run.smk"
include: "workflow/rules/results.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/profiles.smk"
include: "workflow/rules/report.smk"


# Under a cluster executor (profiles/slurm) only the runs go to the batch system: the other steps
# read and write files on the shared file system and take seconds.
localrules:
    all,
    runs,
    results,
    figure,
    figure_pdf,
    utilisation,
    claims,
    profiles,
    report,


rule all:
    default_target: True
    input:
        report_html(),
        # the report links these, and is written beside their drawing, not after it
        expand(f"{FIGURES}/{{scale}}/{{experiment}}.png", scale=SCALES, experiment=IDS),
        expand(f"{FIGURES}/{{scale}}/utilisation/{{experiment}}.png", scale=SCALES, experiment=DATA_IDS),
        expand(f"{FIGURES}/{{scale}}/{{experiment}}.pdf", scale=SCALES, experiment=IDS) if config["pdf"] else [],
        # with launch on, every point's launch is a target of its own: a point asked again
        # (reconsider_not_runnable) runs even where its results are present
        rules.runs.input,


# What is made up to here (the imported modules, the specs) lives as long as Snakemake: frozen,
# the garbage collector leaves it out of its passes during the jobs and at the interpreter's exit
# (0.2 s of a run with nothing to do).
gc.freeze()

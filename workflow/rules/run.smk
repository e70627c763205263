# Step 1, run: one matrix point on the cluster through its stack's launcher. Each run
# is a new attempt directory under RUNS; the marker in STATE records which attempt this
# pipeline made, so a rerun of the pipeline resumes instead of redoing finished points.
# A checkpoint: the parse step lists the run's files only after it has written them.


checkpoint run:
    # a run has the cluster to itself: two jobs side by side would distort both measurements.
    # Under a cluster executor no --cores is given: each run is its own allocation, sized by
    # the profile (profiles/slurm, set-threads).
    threads: workflow.resource_settings.cores or 1
    output:
        marker=f"{STATE}/launched/{{cluster}}/{{scale}}/{{experiment}}/{{point}}.json",
    log:
        f"{STATE}/logs/run/{{cluster}}/{{scale}}/{{experiment}}/{{point}}.log",
    # no `benchmark:`: its sampler reads every job process's smaps twice a second for the first
    # 30 s of each run, CPU the runs would otherwise have; the marker keeps the step's wall time
    run:
        step_run(wildcards, output, log)


rule runs:
    """Launch every point of every experiment at the configured scales (needs launch: true)."""
    input:
        [launched_marker(c, s, e, p) for s in SCALES for e in DATA_IDS for c, p in launch_points(s, e)],

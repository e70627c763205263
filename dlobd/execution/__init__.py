"""Running experiments: the run supervisor and its records (runs), the Slurm job it may run in
(slurmenv, slurmjob), images (apptainer), Spack environments (spack), the planner and the dry
run. Imports the stacks, the cluster and the specs, never the results."""

# Step 2, parse: the chosen attempt of one point (newest ok, else newest) through its
# stack's parser into tidy rows. Reads raw logs, never writes under RUNS.


rule parse:
    input:
        raw=parse_inputs,
        code=parser_code,
    output:
        f"{RESULTS}/{{scale}}/parsed/{{cluster}}/{{experiment}}/{{point}}.csv",
    log:
        f"{RESULTS}/{{scale}}/logs/parse/{{cluster}}/{{experiment}}/{{point}}.log",
    run:
        step_parse(wildcards, output, log)

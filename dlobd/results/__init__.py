"""From raw runs to what a reader sees: tidy results, claim evaluation and verdicts, expected
values, figures, the report, the appendix and the guide. The top layer under the command line."""

"""TFoS's own lines behind absl's prefix (TFoS 1.4 on TensorFlow 1.14), which no whole log of the
real-log corpus holds: read from lines of one posted in yahoo/TensorFlowOnSpark issue #422
(qintian95, 2019-08-07), cut to the lines quoted here."""

from dlobd import stacks

# Three consecutive lines of the executor log in that comment, as posted.
ABSL_NODE_LOG = (
    "I0807 09:57:44.789118 140518901212992 TFSparkNode.py:337] Starting TensorFlow worker:3 as worker "
    "on cluster node 4 on background process\n"
    "19/08/07 09:57:44 INFO python.PythonRunner: Times: total = 2368, boot = 254, init = 73, finish = 2041\n"
    "I0807 09:57:44.794356 140518901212992 TFNode.py:80] 4: ======== worker:3 ========\n"
)


def test_absl_prefixed_tfos_lines_are_events_without_a_year():
    r = stacks.get("tensorflowonspark").parse(ABSL_NODE_LOG)
    assert r.status == "ok" and r.rows == []
    assert r.events == [{"clock": "0807 09:57:44.789118", "event": "node_start", "line": 1, "detail": "worker:3"}]
    # the node's log stops before its 'Finished TensorFlow' line
    assert not r.finished and "Finished TensorFlow" in r.reason

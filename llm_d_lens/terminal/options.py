"""The options every command spells the same way, declared once: ``-o``, and which cluster it reads.

``-o/--output`` is kubectl's: the format of what the command prints. ``--context`` and
``--kubeconfig`` are kubectl's too, passed to every kubectl and helm call; ``--cluster`` names one
of the user's clusters (a context, a snapshot or the demo) from ``--clusters`` or the default
clusters file, and conflicts with the other two (``llm_d_lens/cluster/options.py``).
"""

from __future__ import annotations

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.output import DocumentFormat, OutputFormat

OutputOption = commands.Option(OutputFormat.table, "--output", "-o", help="table (80 columns), wide (every column), json or yaml.")
#: a command whose output is one document (a scenario, manifests): yaml by default, or json
DocumentOption = commands.Option(DocumentFormat.yaml, "--output", "-o", help="yaml or json.")
ContextOption = commands.Option(None, "--context", help="kubeconfig context (default: kubectl's current one; in a pod, its service account).")
KubeconfigOption = commands.Option(None, "--kubeconfig", help="kubeconfig file (default: kubectl's).")
ClusterNameOption = commands.Option(None, "--cluster", help="A cluster by name (see `lens cluster list`).")
ClustersFileOption = commands.Option(
    None, "--clusters", help="Clusters file (default: $LENS_CLUSTERS, else ~/.config/lens/clusters.yaml, else the kubeconfig's contexts).")

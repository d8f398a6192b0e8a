"""The demo: the MySrv operator at work, in one command, with no cluster.

``python -m examples.demo`` starts pyctrl's embedded API server, installs the MySrv CRD,
runs the MySrv operator, applies its samples and shows in the terminal what happens,
live: the MySrvs and their conditions, the Deployments and Services the operator creates,
the records it keeps in a (simulated) DNS zone outside the cluster, and the Events it
records. Then it leaves everything running and prints the kubeconfig, so that kubectl can
look and poke, until Ctrl-C.

``python -m examples.demo --check`` plays the same scenario without the live view and
exits 0 once the expected state is reached, or 1 with what was missing (CI runs it). It is
the default when standard output is not a terminal or ``CI`` is set.

- `examples.demo.scenario`: the steps and the check;
- `examples.demo.view`: the live view;
- `examples.demo.rollout`: a stand-in for kube-controller-manager, which makes
  Deployments available (the embedded server, like envtest, runs no pods).
"""

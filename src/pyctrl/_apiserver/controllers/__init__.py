"""The controllers the embedded API server runs beside its handlers.

Like envtest's real control plane, no workload controller runs (no Deployment creates
Pods). What runs is what makes the API itself behave, one controller per concern, each fed
by store events through its own queue of typed work (`queue`):

- `garbagecollector`: kube-controller-manager's garbage collector;
- `namespace`: kube-controller-manager's namespace controller;
- `crd`: apiextensions-apiserver's CRD controllers (naming, establishing, cleanup finalizer);
- `manager`: the three in one TaskGroup, as kube-controller-manager runs them.
"""

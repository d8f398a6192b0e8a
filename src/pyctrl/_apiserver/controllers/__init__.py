"""The controllers the embedded API server runs beside its handlers.

Like envtest's real control plane, no workload controller runs (no Deployment creates
Pods). What runs is what makes the API itself behave: the garbage collector
(``pkg/controller/garbagecollector``), namespace cleanup (``pkg/controller/namespace``)
and the CRD controllers of apiextensions-apiserver (naming, establishing, finalizer).
"""

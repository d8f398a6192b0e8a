"""Storage: etcd's part (`store`) and the watch cache's fan-out (`watch`).

kube-apiserver keeps objects in etcd behind ``k8s.io/apiserver/pkg/storage`` and serves
watches from its watch cache (``storage/cacher``). Here objects live in memory under one
global resourceVersion, with a bounded event history for watches and paging.
"""

"""The embedded server's floor: what kube-apiserver takes from ``k8s.io/apimachinery``.

`errors` builds ``metav1.Status`` answers (``pkg/api/errors``), `fields` parses and
matches field selectors (``pkg/fields``), and `jsonpath` evaluates the JSONPath subset of
printer columns and scale paths (client-go's ``util/jsonpath``). Nothing here imports
another part of envtest.
"""

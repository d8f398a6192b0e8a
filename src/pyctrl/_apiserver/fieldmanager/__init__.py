"""Field ownership and server-side apply: ``k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager``.

`managedfields` records who set which field (``metadata.managedFields``) and applies
configurations with conflict detection; `merge_keys` is the type model
(``sigs.k8s.io/structured-merge-diff``'s schema) saying how lists and maps merge.
"""

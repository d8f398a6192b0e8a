"""The floor both halves of pyctrl stand on: what Go code takes from ``k8s.io/apimachinery``.

The runtime (`pyctrl.client`) and the embedded API server (`pyctrl._apiserver`, with
`pyctrl._apiextensions`) share these, each defined once here and importing nothing else of
pyctrl:

* `field`: field paths and the one vocabulary of field errors (`field.Cause`, a
  ``metav1.StatusCause``; ``pkg/util/validation/field``);
* `gofmt`: Go's printing of values (``%q``, ``%v``, ``%#v``, ``encoding/json``);
* `jsonvalue`: equality of decoded JSON, named by what each comparison means;
* `meta`: metadata accessors of a JSON object (``pkg/api/meta``);
* `merge_keys`: the built-in types' merge metadata (list types, list and merge keys),
  read by the client's strategic diff, strategic merge patch and server-side apply.

Like controller-runtime's ``pkg/internal``, nothing outside pyctrl may import it.
"""

package capability

import "errors"

// ErrAmbiguous is wrapped by the errors of canonicalisers that found two
// reasonable readings of one argument that name different resources: a path
// whose ".." resolves differently lexically and physically ([CanonPath]), a
// URL that two parsers read differently. The gateway denies such a call; a
// caller branches on it only to explain the denial.
var ErrAmbiguous = errors.New("ambiguous")

package schema

import (
	"errors"
	"fmt"
	"strings"
)

const (
	draft2019URL = "https://json-schema.org/draft/2019-09/schema"
	draft2020URL = "https://json-schema.org/draft/2020-12/schema"
)

// draftOf reads the root's $schema: 4, 6, 7, 2019 or 2020 (the default), and
// normalises it in root to the URL the validator knows.
func draftOf(root map[string]any) (int, error) {
	v, ok := root["$schema"]
	if !ok {
		return 2020, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, errors.New("$schema is not a string")
	}
	u := strings.TrimSuffix(s, "#")
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		u = rest
	} else {
		u = strings.TrimPrefix(u, "http://")
	}
	switch u {
	case "json-schema.org/draft-04/schema":
		return 4, nil
	case "json-schema.org/draft-06/schema":
		return 6, nil
	case "json-schema.org/draft-07/schema":
		return 7, nil
	case "json-schema.org/draft/2019-09/schema":
		root["$schema"] = draft2019URL
		return 2019, nil
	case "json-schema.org/draft/2020-12/schema":
		root["$schema"] = draft2020URL
		return 2020, nil
	}
	return 0, fmt.Errorf("$schema %q is not a draft aegis knows (4, 6, 7, 2019-09, 2020-12)", truncate(s, 80))
}

// later lists the keywords that drafts 4 to 7 do not know. Such a keyword is ignored
// by the server's validator, so translation drops it rather than bring it to life.
var later = map[string]bool{
	"$anchor": true, "$dynamicRef": true, "$dynamicAnchor": true, "$recursiveRef": true,
	"$recursiveAnchor": true, "$vocabulary": true, "unevaluatedProperties": true,
	"unevaluatedItems": true, "prefixItems": true, "dependentSchemas": true,
	"dependentRequired": true, "minContains": true, "maxContains": true,
	"contentSchema": true,
}

// translate rewrites a draft 4, 6 or 7 schema as the 2020-12 schema that accepts the
// same instances, so that it can be closed with unevaluatedProperties. at is the
// schema's JSON Pointer, "" for the root. Values that are not schemas (a non-object
// where a schema belongs) are copied for the validator to reject.
func translate(v any, draft int, at string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	if at == "" {
		out["$schema"] = draft2020URL
	}
	if ref, ok := m["$ref"]; ok {
		// Drafts 4 to 7 ignore every sibling of $ref. The containers stay, since
		// references can point into them.
		out["$ref"] = ref
		for _, k := range []string{"definitions", "$defs"} {
			if d, ok := m[k]; ok {
				var err error
				if out[k], err = translateMap(d, draft, at+"/"+k); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	idKeyword := "$id"
	if draft == 4 {
		idKeyword = "id"
	}
	for k, val := range m {
		kat := at + "/" + escapeToken(k)
		var err error
		switch k {
		case "$schema":
			// Only the root's counts; the root's was set above.
		case idKeyword:
			err = translateID(out, val, at)
		case "$id": // draft 4 knows only "id"
		case "items":
			if list, ok := val.([]any); ok {
				if out["prefixItems"], err = translateList(list, draft, at+"/prefixItems"); err != nil {
					return nil, err
				}
				if extra, ok := m["additionalItems"]; ok {
					out["items"], err = translate(extra, draft, at+"/items")
				}
			} else {
				out["items"], err = translate(val, draft, kat)
			}
		case "additionalItems":
			// Translated with items; without an items array it applies to nothing.
		case "dependencies":
			err = translateDependencies(out, val, draft, at)
		case "properties", "patternProperties", "definitions", "$defs":
			out[k], err = translateMap(val, draft, kat)
		case "allOf", "anyOf", "oneOf":
			if list, ok := val.([]any); ok {
				out[k], err = translateList(list, draft, kat)
			} else {
				out[k] = val
			}
		case "additionalProperties", "not":
			out[k], err = translate(val, draft, kat)
		case "contains", "propertyNames":
			if draft >= 6 {
				out[k], err = translate(val, draft, kat)
			}
		case "if", "then", "else":
			if draft >= 7 {
				out[k], err = translate(val, draft, kat)
			}
		case "const":
			if draft >= 6 {
				out[k] = val
			}
		case "exclusiveMaximum", "exclusiveMinimum":
			if draft > 4 {
				out[k] = val
			} else if _, ok := val.(bool); !ok {
				err = fmt.Errorf("%s is not a boolean, as draft 4 requires", kat)
			}
		default:
			if !later[k] {
				out[k] = val
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if draft == 4 {
		// Draft 4's exclusive bounds are booleans that qualify maximum and minimum.
		for _, b := range [][2]string{{"exclusiveMaximum", "maximum"}, {"exclusiveMinimum", "minimum"}} {
			if ex, _ := m[b[0]].(bool); ex {
				if bound, ok := m[b[1]]; ok {
					out[b[0]] = bound
					delete(out, b[1])
				}
			}
		}
	}
	return out, nil
}

func translateMap(v any, draft int, at string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for k, s := range m {
		var err error
		if out[k], err = translate(s, draft, at+"/"+escapeToken(k)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func translateList(list []any, draft int, at string) ([]any, error) {
	out := make([]any, len(list))
	for i, s := range list {
		var err error
		if out[i], err = translate(s, draft, fmt.Sprintf("%s/%d", at, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// translateDependencies splits draft 4–7 dependencies: a list of names is a
// dependentRequired, a schema a dependentSchemas.
func translateDependencies(out map[string]any, v any, draft int, at string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s/dependencies is not an object", at)
	}
	req, sch := map[string]any{}, map[string]any{}
	for k, d := range m {
		if list, ok := d.([]any); ok {
			req[k] = list
			continue
		}
		var err error
		if sch[k], err = translate(d, draft, at+"/dependentSchemas/"+escapeToken(k)); err != nil {
			return err
		}
	}
	if len(req) > 0 {
		out["dependentRequired"] = req
	}
	if len(sch) > 0 {
		out["dependentSchemas"] = sch
	}
	return nil
}

// translateID turns a draft 4–7 id into $id (at the root only) and $anchor: in those
// drafts "#name" is how a subschema is given a plain-name anchor.
func translateID(out map[string]any, v any, at string) error {
	id, ok := v.(string)
	if !ok {
		return fmt.Errorf("id at %q is not a string", at)
	}
	base, anchor, _ := strings.Cut(id, "#")
	if base != "" {
		if at != "" {
			return fmt.Errorf("id %q at %s changes the base URI below the root; embedded schema resources are not supported", truncate(id, 80), at)
		}
		out["$id"] = base
	}
	if anchor != "" {
		if strings.HasPrefix(anchor, "/") {
			return fmt.Errorf("id %q at %q: a JSON Pointer is not an anchor", truncate(id, 80), at)
		}
		out["$anchor"] = anchor
	}
	return nil
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

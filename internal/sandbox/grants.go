package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// within reports whether p is dir or lies below it, component-wise.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir) && len(p) > len(dir) && p[len(dir)] == '/'
}

// carve returns grants with holes cut out, for when no mount can hide a
// hole inside a grant (Landlock only grants): a grant that holds a hole is
// replaced by its entries, but the hole, recursively along the hole's
// path. A grant inside a hole is dropped; so is a directory that cannot be
// listed, and a symbolic link that leads into a hole. Entries created in a
// carved directory later are not granted (fail closed).
func carve(grants, holes []string) []string {
	var out []string
	for _, g := range grants {
		out = append(out, carveOne(g, holes, 0)...)
	}
	return cleanAll(out)
}

func carveOne(g string, holes []string, depth int) []string {
	inside := false
	for _, h := range holes {
		if within(g, h) {
			return nil
		}
		if within(h, g) {
			inside = true
		}
	}
	if real, err := filepath.EvalSymlinks(g); err == nil && real != g {
		for _, h := range holes {
			if within(real, h) {
				return nil
			}
		}
	}
	if !inside {
		return []string{g}
	}
	if depth > 32 {
		return nil
	}
	entries, err := os.ReadDir(g)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, carveOne(filepath.Join(g, e.Name()), holes, depth+1)...)
	}
	return out
}

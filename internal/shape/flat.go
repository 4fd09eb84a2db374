package shape

import (
	"strings"

	"github.com/aegis-mcp/aegis/internal/args"
)

// This file is the flat fast path of [Fields.Apply], a twin of the tree
// edit (tree.go) and of the general case check (caseChecks in apply.go):
// for a tool whose every pinned, cleared and identity field is a member of
// the arguments object itself, the members are read once and the edit is
// written with an [args.Builder], without building a tree. It must give the
// tree edit's arguments and errors exactly; TestShapeFlatEqualsTree,
// TestShapeFlatManyMembers and FuzzShapeFlat hold it to them
// (docs/design/fast-paths.md).

// flatPlan is what the case check of a flat tool learnt of the arguments
// object for the flat edit: which of its members (the first 64) name a
// touched field exactly, and so are dropped. known is false when it learnt
// nothing.
type flatPlan struct {
	drop  uint64
	known bool
}

// caseCheckFlat is caseChecks for a flat tool touching at most eight
// fields: it reads the members once for every field, where the general
// check looks each field's pointer up apart, and gives the same answer: an
// identity field present as written or in another case, then for each
// pinned and each cleared field a key naming it but for case while no key
// names it exactly, in that order. Its plan is known when it applies and
// the object has at most 64 members.
func (t *Fields) caseCheckFlat(root args.Value) (plan flatPlan, err error) {
	if t == nil || !t.flat || len(t.touched) > 8 || root.Kind() != args.Object {
		return flatPlan{}, nil
	}
	plan.known = root.Len() <= 64
	if len(t.touched) == 0 {
		return plan, nil
	}
	// By index in t.touched, which for a flat tool lists the cleared, the
	// pinned and the identity fields, in that order, each once.
	var exact, folded uint8
	var variant [8]int32 // the index of the first member naming touched[j] but for case
	i := -1
	for k := range root.Members() {
		i++
		for j, name := range t.touched {
			switch {
			case len(k) > 0 && len(name) > 0 && (k[0]|name[0]) < 0x80 && (k[0]^name[0])&^0x20 != 0:
				// ASCII first bytes that are neither equal nor a case pair:
				// not the same key (SameKey's own first test, inline).
			case !args.SameKey(k, name):
			case k == name:
				exact |= 1 << j
				plan.drop |= 1 << (i & 63)
			case folded&(1<<j) == 0:
				variant[j], folded = int32(i), folded|1<<j
			}
		}
	}
	nc, ns := len(t.clear), len(t.Set)
	for i, f := range t.Identity {
		if (exact|folded)&(1<<(nc+ns+i)) != 0 {
			return flatPlan{}, refusal(CheckIdentity, "argument %s is set by aegis from the session; the call may not supply it", f.Pointer)
		}
	}
	key := func(j int) string { k, _ := root.Member(int(variant[j])); return k }
	for i := range t.Set {
		if folded&^exact&(1<<(nc+i)) != 0 {
			return flatPlan{}, refusal(CheckField, "argument %q differs from the pinned field %s only in case", key(nc+i), t.Set[i].Pointer)
		}
	}
	for i := range t.clear {
		if folded&^exact&(1<<i) != 0 {
			return flatPlan{}, refusal(CheckField, "argument %q differs from the cleared field %s only in case", key(i), t.Clear[i])
		}
	}
	return plan, nil
}

// applyFlat is the edit step for a tool whose set, clear and identity
// fields are all members of the arguments object itself: the members are
// copied as their source text, leaving out the ones aegis sets or clears,
// and the set and identity fields appended. It gives the same arguments as
// the tree edit, without building a tree, and writes them with an
// [args.Builder]: when the case check found no member to drop (the model
// wrote none of the fields aegis sets or clears, the usual case), onto the
// end of w.Doc itself, whose members stay as they are; otherwise into
// w.Spare, which becomes w.Doc. Either way w.Doc is the document of exactly
// the text it returns, without decoding that text again.
func (t *Fields) applyFlat(w *Work, p *Principal, root args.Value, size int, plan flatPlan) ([]byte, error) {
	// The identity values first: a principal without one refuses the call
	// before any text is written.
	var idBuf [4]string
	ids := idBuf[:0]
	for _, f := range t.Identity {
		v, ok := p.value(f.Source)
		if !ok {
			return nil, refusal(CheckIdentity, "argument %s: the principal %q has no %s in the configuration", f.Pointer, p.name(), f.Source)
		}
		ids = append(ids, strings.ToValidUTF8(v, "\uFFFD"))
	}
	b := &w.B
	buf := w.Out[:0]
	if cap(buf) < size+t.setBytes {
		buf = make([]byte, 0, size+t.setBytes)
	}
	var next *args.Doc // the spare document, when the members are copied
	var placed uint64  // the set fields written in the model's member's place (a flat tool has at most 64)
	if !plan.known || plan.drop != 0 || !b.BeginAppend(w.Doc, buf, w.Limits) {
		next = w.Spare
		b.Begin(next, buf, w.Limits)
		for i := range root.Len() {
			var k string
			if plan.known {
				if plan.drop&(1<<i) == 0 {
					b.Keep(root, i)
					continue
				}
				k, _ = root.Member(i)
			} else if k, _ = root.Member(i); !t.touches(k) {
				b.Keep(root, i)
				continue
			}
			for j := range t.Set {
				if t.Set[j].toks[0] == k {
					b.Member(k, t.Set[j].value)
					placed |= 1 << j
				}
			}
		}
	}
	for j := range t.Set {
		if placed&(1<<j) == 0 {
			b.Member(t.Set[j].toks[0], t.Set[j].value)
		}
	}
	for i, f := range t.Identity {
		b.StringMember(f.toks[0], ids[i])
	}
	out, err := b.End()
	if err != nil {
		return nil, refusal(CheckField, "the shaped arguments: %v", err)
	}
	w.Out = out // kept, grown, for the next call on this storage
	if next != nil {
		w.Doc, w.Spare = next, w.Doc
	}
	return out, nil
}

package args

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// decoded is what a Doc holds once a Decode or a Builder is done with it: its text and
// every structure a Value reads.
type decoded struct {
	Src, Esc string
	Nodes    []node
	Kids     []int32
	Objs     []int32
	Open     int // frames and stack left over: none
	Values   int
	Building bool
}

func snapshot(d *Doc) decoded {
	return decoded{Src: d.src, Esc: d.esc, Nodes: d.nodes, Kids: d.kids, Objs: d.objs, Open: len(d.frames) + len(d.stack), Values: d.values, Building: d.building}
}

// member is one member for a Builder in a test: a value of another Doc, or a string.
type bmember struct {
	key   string
	value string // JSON text of a value, when str is false
	str   bool
	s     string
	// keep, with a value, has the Builder keep the member of an object where it
	// is written with the key rawKey (JSON text; key is then its decoding).
	keep   bool
	rawKey string
}

// build writes members with a Builder under lim and checks the result against Decode
// of the text it returned, the reference: the same text must decode to the same
// document, and a text Decode refuses must be refused.
func build(t *testing.T, members []bmember, lim *Limits) ([]byte, error) {
	t.Helper()
	var srcs []*Doc
	var b Builder
	var d Doc
	d.Decode([]byte(`{"stale":1}`), nil) // whatever it held must go
	b.Begin(&d, make([]byte, 0, 64), lim)
	for _, m := range members {
		if m.str {
			b.StringMember(m.key, m.s)
			continue
		}
		src := new(Doc)
		srcs = append(srcs, src)
		if m.keep {
			if err := src.Decode([]byte(`{`+m.rawKey+`:`+m.value+`}`), nil); err != nil {
				t.Fatalf("test member %s:%s: %v", m.rawKey, m.value, err)
			}
			b.Keep(src.Root(), 0)
			continue
		}
		if err := src.Decode([]byte(`{"v":`+m.value+`}`), nil); err != nil {
			t.Fatalf("test value %s: %v", m.value, err)
		}
		v, _ := src.Root().Lookup("v")
		b.Member(m.key, v)
	}
	out, err := b.End()
	// The reference: the text every member would have, decoded.
	var text strings.Builder
	text.WriteByte('{')
	for i, m := range members {
		if m.keep {
			var kd Doc
			if err := kd.Decode([]byte(`{`+m.rawKey+`:0}`), nil); err != nil {
				t.Fatal(err)
			}
			m.key, _ = kd.Root().Member(0)
		}
		if i > 0 {
			text.WriteByte(',')
		}
		text.Write(AppendString(nil, m.key))
		text.WriteByte(':')
		if m.str {
			text.Write(AppendString(nil, m.s))
		} else {
			text.WriteString(m.value)
		}
	}
	text.WriteByte('}')
	var ref Doc
	refErr := ref.Decode([]byte(text.String()), lim)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("Builder error %v, Decode of %q error %v", err, text.String(), refErr)
	}
	if err != nil {
		if d.Root().Kind() != Invalid {
			t.Fatal("the Builder failed but its Doc holds a document")
		}
		return nil, err
	}
	if string(out) != text.String() {
		t.Fatalf("Builder wrote %q, want %q", out, text.String())
	}
	if diff := cmp.Diff(snapshot(&ref), snapshot(&d), cmp.AllowUnexported(node{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("the built Doc differs from Decode of %q (-decode +built):\n%s", out, diff)
	}
	return out, nil
}

func TestBuilder(t *testing.T) {
	small := &Limits{MaxDepth: 3, MaxElements: 6, MaxStringBytes: 8, MaxBytes: 80}
	tests := []struct {
		name    string
		members []bmember
		lim     *Limits
		wantErr string // substring; "" for none
	}{
		{name: "empty", members: nil},
		{name: "scalars", members: []bmember{{key: "path", value: `"/home/a"`}, {key: "head", value: `40`}, {key: "b", value: `true`}, {key: "n", value: `null`}, {key: "f", value: `-1.5e+3`}}},
		{name: "string members", members: []bmember{{key: "encoding", str: true, s: "utf-8"}, {key: "who", str: true, s: "al\"ice\n"}}},
		{name: "escapes kept as written", members: []bmember{{key: "s", value: `"a\u0041\/\ud83d\ude00"`}, {key: "k", value: `{"\u0061":"\n","b":["\"",1]}`}}},
		{name: "key needing escapes", members: []bmember{{key: "a\"b\\c\x01", value: `1`}, {key: "é", value: `"ü"`}}},
		{name: "whitespace inside a value", members: []bmember{{key: "o", value: "{ \"a\" : [ 1 , 2 ] ,\n\"b\":{} }"}, {key: "e", value: `[]`}}},
		{name: "nested", members: []bmember{{key: "a", value: `[[1,[2]],{"x":{"y":null}}]`}, {key: "b", str: true, s: ""}}},
		{name: "kept members", members: []bmember{{keep: true, rawKey: `"path"`, value: `"/a"`}, {keep: true, rawKey: `"\u0061"`, value: `[1, "\n"]`}, {keep: true, rawKey: `"\""`, value: `{}`}, {keep: true, rawKey: `"é"`, value: `1e3`}}},
		{name: "kept member spaced", members: []bmember{{keep: true, rawKey: "\"a\" \n", value: `[1]`}, {keep: true, rawKey: `"b"`, value: `2`}}},
		{name: "kept member too long", members: []bmember{{keep: true, rawKey: `"123456789"`, value: `1`}}, lim: small, wantErr: "MaxStringBytes"},
		{name: "kept duplicate", members: []bmember{{keep: true, rawKey: `"a"`, value: `1`}, {keep: true, rawKey: `"\u0041"`, value: `2`}}, wantErr: "duplicate"},
		{name: "kept too deep", members: []bmember{{keep: true, rawKey: `"a"`, value: `[[[1]]]`}}, lim: small, wantErr: "MaxDepth"},
		{name: "duplicate key", members: []bmember{{key: "a", value: `1`}, {key: "a", str: true, s: "x"}}, wantErr: "duplicate"},
		{name: "keys differing in case", members: []bmember{{key: "path", value: `1`}, {key: "PATH", value: `2`}}, wantErr: "duplicate"},
		{name: "invalid UTF-8 key", members: []bmember{{key: "a\xff", value: `1`}}, wantErr: "UTF-8"},
		{name: "invalid UTF-8 string", members: []bmember{{key: "a", str: true, s: "\xed\xa0\x80"}}, wantErr: "UTF-8"},
		{name: "too deep", members: []bmember{{key: "a", value: `[[[1]]]`}}, lim: small, wantErr: "MaxDepth"},
		{name: "deep enough", members: []bmember{{key: "a", value: `[[1]]`}}, lim: small},
		{name: "too many values", members: []bmember{{key: "a", value: `[1,2,3,4,5]`}}, lim: small, wantErr: "MaxElements"},
		{name: "string too long", members: []bmember{{key: "a", value: `"123456789"`}}, lim: small, wantErr: "MaxStringBytes"},
		{name: "escaped string within the cap", members: []bmember{{key: "a", value: `"\u0031\u0032\u0033\u0034\u0035\u0036\u0037\u0038"`}}, lim: small},
		{name: "key too long", members: []bmember{{key: "123456789", value: `1`}}, lim: small, wantErr: "MaxStringBytes"},
		{name: "string member too long", members: []bmember{{key: "a", str: true, s: "123456789"}}, lim: small, wantErr: "MaxStringBytes"},
		{name: "too many bytes", members: []bmember{{key: "a", str: true, s: "1234567"}, {key: "b", str: true, s: "1234567"}, {key: "c", str: true, s: "1234567"}, {key: "d", str: true, s: "1234567"}, {key: "e", value: `"1234567"`}}, lim: &Limits{MaxBytes: 60}, wantErr: "MaxBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(t, tt.members, tt.lim)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuilderRefusesItsOwnDoc: a value of the Doc being built is stale by then, and
// refused rather than read.
func TestBuilderRefusesItsOwnDoc(t *testing.T) {
	var d Doc
	if err := d.Decode([]byte(`{"a":1}`), nil); err != nil {
		t.Fatal(err)
	}
	v, _ := d.Root().Lookup("a")
	var b Builder
	b.Begin(&d, nil, nil)
	b.Member("a", v)
	if _, err := b.End(); err == nil {
		t.Fatal("End accepted a value of the Doc being built")
	}
	if d.Root().Kind() != Invalid {
		t.Fatal("the failed Builder left a document")
	}
}

// FuzzBuilder holds the Builder to Decode: members taken from a fuzzed document (each
// kept or not, under a fuzzed key), and string members, under fuzzed limits, must give
// the text and the Doc that Decode gives for that text, and fail exactly when it fails.
func FuzzBuilder(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), "k", "v\x00", uint8(0xff), uint8(0))
	}
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"c":"x"}`), "A", "é", uint8(0x5), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, key, s string, keep, lim uint8) {
		var src Doc
		if src.Decode(data, nil) != nil {
			return
		}
		var members []bmember
		root := src.Root()
		for i := range root.Len() {
			k, v := root.Member(i)
			if keep&(1<<(i%8)) == 0 {
				continue
			}
			switch i % 3 {
			case 0: // kept: its key as written in data
				raw := src.nodes[src.kids[src.nodes[0].a+2*int32(i)]]
				members = append(members, bmember{keep: true, rawKey: string(data[raw.start:raw.end]), value: v.Raw()})
				continue
			case 2:
				k = key
			}
			members = append(members, bmember{key: k, value: v.Raw()})
		}
		members = append(members, bmember{key: key, str: true, s: s})
		var l *Limits
		if lim != 0 {
			l = &Limits{MaxDepth: int(lim & 7), MaxElements: int(lim >> 3 & 7 * 3), MaxStringBytes: int(lim >> 6 * 4), MaxBytes: int(lim) * 2}
		}
		if _, err := build(t, members, l); err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrLimit) {
				t.Fatalf("Builder error %v is neither a *SyntaxError nor ErrLimit", err)
			}
		}
	})
}

// FuzzSameKey holds sameKey's shortcut to strings.EqualFold.
func FuzzSameKey(f *testing.F) {
	for _, p := range [][2]string{{"path", "PATH"}, {"a", "b"}, {"k", "\u212a"}, {"s", "\u017f"}, {"@", "`"}, {"[", "{"}, {"", "a"}, {"Path", "pAth"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := sameKey(a, b), a == b || strings.EqualFold(a, b); got != want {
			t.Fatalf("sameKey(%q, %q) = %v, want %v", a, b, got, want)
		}
	})
}

// TestBuilderKeepFromOneObject: members kept from one checked object skip the check
// among themselves; every other pair of keys that name the same member is still
// refused, and so is any way around the shortcut.
func TestBuilderKeepFromOneObject(t *testing.T) {
	type op struct {
		keep int    // index to keep from the first source's root, when key is ""
		key  string // a string member with this key, when set
		from int    // keep from source 1 (another Doc) or 2 (the nested object of source 0)
	}
	src0 := `{"path":"/a","head":1,"PAth2":"x","inner":{"path":"/b","z":1}}`
	src1 := `{"path":"/c","tail":2}`
	tests := []struct {
		name    string
		ops     []op
		wantErr bool
	}{
		{"every member kept", []op{{keep: 0}, {keep: 1}, {keep: 2}, {keep: 3}}, false},
		{"some kept, one added", []op{{keep: 0}, {keep: 1}, {key: "encoding"}}, false},
		{"added equals a kept key", []op{{keep: 0}, {keep: 1}, {key: "path"}}, true},
		{"added differs from a kept key only in case", []op{{keep: 0}, {key: "PATH"}}, true},
		{"added before the kept key it equals", []op{{key: "head"}, {keep: 0}, {keep: 1}}, true},
		{"added folds to a kept key (Kelvin sign)", []op{{keep: 0}, {key: "inner"}, {key: "\u212aey"}, {key: "key"}}, true},
		{"two added keys alike", []op{{keep: 0}, {key: "x"}, {key: "X"}}, true},
		{"one member kept twice", []op{{keep: 0}, {keep: 1}, {keep: 0}}, true},
		{"a kept key of another Doc", []op{{keep: 0}, {keep: 0, from: 1}}, true},
		{"another Doc's other key", []op{{keep: 0}, {keep: 1, from: 1}}, false},
		{"a kept key of a nested object", []op{{keep: 0}, {keep: 0, from: 2}}, true},
		{"the nested object's other key", []op{{keep: 0}, {keep: 1, from: 2}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var docs [2]Doc
			for i, s := range []string{src0, src1} {
				if err := docs[i].Decode([]byte(s), nil); err != nil {
					t.Fatal(err)
				}
			}
			inner, _ := docs[0].Root().Lookup("inner")
			objs := []Value{docs[0].Root(), docs[1].Root(), inner}
			var d Doc
			var b Builder
			b.Begin(&d, nil, nil)
			for _, o := range tt.ops {
				if o.key != "" {
					b.StringMember(o.key, "v")
				} else {
					b.Keep(objs[o.from], o.keep)
				}
			}
			out, err := b.End()
			var ref Doc
			refErr := ref.Decode(out, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("End: %v (text %s), want error %v", err, out, tt.wantErr)
			}
			if err == nil && refErr != nil {
				t.Fatalf("End accepted %s, which Decode refuses: %v", out, refErr)
			}
		})
	}
}

// TestBuilderManyMembers: past 64 members the shortcut gives way to the full check,
// which still finds keys alike among the last members.
func TestBuilderManyMembers(t *testing.T) {
	var text strings.Builder
	text.WriteByte('{')
	for i := range 70 {
		if i > 0 {
			text.WriteByte(',')
		}
		text.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	text.WriteByte('}')
	var src, d Doc
	if err := src.Decode([]byte(text.String()), nil); err != nil {
		t.Fatal(err)
	}
	for _, dup := range []string{"k3", "K69", "k68"} {
		var b Builder
		b.Begin(&d, nil, nil)
		for i := range 70 {
			b.Keep(src.Root(), i)
		}
		b.StringMember(dup, "x")
		if _, err := b.End(); err == nil {
			t.Errorf("a member %q after 70 kept ones was accepted", dup)
		}
	}
	var b Builder
	b.Begin(&d, nil, nil)
	for i := range 66 {
		b.StringMember("s"+strconv.Itoa(i), "x")
	}
	b.StringMember("S65", "x")
	if _, err := b.End(); err == nil {
		t.Error("two string members alike after 66 members were accepted")
	}
}

// TestBuilderRefusesADocBeingBuilt: a value of a Doc that another Builder is still
// writing holds objects nobody has checked; it is refused.
func TestBuilderRefusesADocBeingBuilt(t *testing.T) {
	var src, a, d Doc
	if err := src.Decode([]byte(`{"o":{"x":1,"X":2}}`), nil); err == nil {
		t.Fatal("Decode accepted keys alike")
	}
	if err := src.Decode([]byte(`{"p":1,"q":2}`), nil); err != nil {
		t.Fatal(err)
	}
	var ba, bd Builder
	ba.Begin(&a, nil, nil)
	ba.Keep(src.Root(), 0)
	bd.Begin(&d, nil, nil)
	bd.Member("a", a.Root())
	if _, err := bd.End(); err == nil {
		t.Error("Member took a value of a Doc being built")
	}
	bd.Begin(&d, nil, nil)
	bd.Keep(a.Root(), 0)
	if _, err := bd.End(); err == nil {
		t.Error("Keep took a value of a Doc being built")
	}
	if _, err := ba.End(); err != nil {
		t.Fatal(err)
	}
	bd.Begin(&d, nil, nil)
	bd.Member("a", a.Root())
	if out, err := bd.End(); err != nil || string(out) != `{"a":{"p":1}}` {
		t.Errorf("after End, Member gave %s, %v", out, err)
	}
}

// FuzzBuilderKeep holds End's shortcut for members kept from one object to Decode:
// members kept from a fuzzed document's root (any index, any number of times), from
// a nested object, and string members under fuzzed keys, in a fuzzed order, must give
// a text that Decode reads to the same document, and fail exactly when Decode fails.
func FuzzBuilderKeep(f *testing.F) {
	f.Add([]byte(`{"path":"/a","head":1,"o":{"path":1}}`), []byte{0, 1, 0x80, 0x41}, "PATH", "x")
	f.Add([]byte(`{"a":1,"b":2}`), []byte{0, 0}, "a", "b")
	f.Add([]byte(`{"k":1,"o":{"K":2}}`), []byte{0, 0xc0}, "\u212a", "k")
	f.Fuzz(func(t *testing.T, data, ops []byte, k1, k2 string) {
		var src Doc
		if src.Decode(data, nil) != nil {
			return
		}
		root := src.Root()
		var nested Value
		for _, v := range root.Members() {
			if v.Kind() == Object {
				nested = v
				break
			}
		}
		var d Doc
		var b Builder
		b.Begin(&d, nil, nil)
		text := []byte{'{'} // the reference: what the Builder should write
		add := func(key string, raw string) {
			if len(text) > 1 {
				text = append(text, ',')
			}
			text = append(AppendString(text, key), ':')
			text = append(text, raw...)
		}
		keep := func(obj Value, i int) {
			b.Keep(obj, i)
			k, v := obj.Member(i)
			add(k, v.Raw())
		}
		for _, o := range ops {
			switch {
			case o&0xc0 == 0xc0 && nested.Kind() == Object && nested.Len() > 0:
				keep(nested, int(o&0x3f)%nested.Len())
			case o&0x80 != 0:
				k := []string{k1, k2}[o&1]
				b.StringMember(k, "v")
				add(k, `"v"`)
			case root.Len() > 0:
				keep(root, int(o)%root.Len())
			}
		}
		text = append(text, '}')
		out, err := b.End()
		var want Doc
		wantErr := want.Decode(text, nil)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Builder error %v, Decode of %s error %v", err, text, wantErr)
		}
		if err != nil {
			return
		}
		var ref Doc
		if rerr := ref.Decode(out, nil); rerr != nil {
			t.Fatalf("End accepted %s, which Decode refuses: %v", out, rerr)
		}
		if diff := cmp.Diff(snapshot(&ref), snapshot(&d), cmp.AllowUnexported(node{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the built Doc differs from Decode of its text (-want +got):\n%s", diff)
		}
	})
}

// appendBuild builds with BeginAppend: members written after those of the document
// data, each a value of another document (the JSON text value) or a string.
func appendBuild(t *testing.T, data []byte, members []bmember, lim *Limits) (out []byte, err error) {
	t.Helper()
	var d Doc
	if err := d.Decode(data, lim); err != nil {
		return nil, err
	}
	old := d.Root()
	var b Builder
	if !b.BeginAppend(&d, make([]byte, 0, 8), lim) {
		t.Fatal("BeginAppend refused a decoded object")
	}
	if old.Kind() != Invalid {
		t.Fatal("a Value of the document before BeginAppend is not stale")
	}
	// The reference: the text up to the closing brace, the members as Member writes them.
	var ref Doc
	if err := ref.Decode(data, lim); err != nil {
		t.Fatal(err)
	}
	text := []byte(ref.src[:ref.nodes[0].end-1])
	n := ref.Root().Len()
	for _, m := range members {
		if n > 0 {
			text = append(text, ',')
		}
		n++
		text = append(AppendString(text, m.key), ':')
		if m.str {
			b.StringMember(m.key, m.s)
			text = AppendString(text, m.s)
			continue
		}
		src := new(Doc)
		if err := src.Decode([]byte(`{"v":`+m.value+`}`), nil); err != nil {
			t.Fatalf("test value %s: %v", m.value, err)
		}
		v, _ := src.Root().Lookup("v")
		b.Member(m.key, v)
		text = append(text, m.value...)
	}
	text = append(text, '}')
	out, err = b.End()
	var want Doc
	wantErr := want.Decode(text, lim)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("Builder error %v, Decode of %s error %v", err, text, wantErr)
	}
	if err != nil {
		if d.Root().Kind() != Invalid || d.building {
			t.Fatal("the Builder failed but its Doc holds a document")
		}
		return nil, err
	}
	if string(out) != string(text) {
		t.Fatalf("text %s, want %s", out, text)
	}
	if !d.Root().StringsMayHold("{}\xef") && holds(d.Root(), "{}\xef") {
		t.Fatalf("StringsMayHold is false for the built %s, whose strings hold a brace", out)
	}
	if diff := cmp.Diff(snapshot(&want), snapshot(&d), cmp.AllowUnexported(node{}), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("the Doc differs from Decode of its text (-want +got):\n%s", diff)
	}
	return out, nil
}

func TestBuilderAppend(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		members []bmember
		lim     *Limits
		wantErr string
	}{
		{"to an empty object", `{}`, []bmember{{key: "a", value: `1`}}, nil, ""},
		{"to an empty object with space", ` { } `, []bmember{{key: "a", str: true, s: "x"}}, nil, ""},
		{"nothing appended", ` {"a" : [1, {"b":"\u00e9"}] } `, nil, nil, ""},
		{"after nested containers and escapes", `{"a":[1,{"b":"\u00e9","c":{}}],"d":"\n"}`,
			[]bmember{{key: "e", value: `{"f":["\u0041",{"g":null,"h":true}]}`}, {key: "i\"", str: true, s: "é\u2028"}}, nil, ""},
		{"a key the object holds", `{"path":"/a","head":1}`, []bmember{{key: "head", value: `2`}}, nil, "duplicate"},
		{"a key the object holds in another case", `{"path":"/a","head":1}`, []bmember{{key: "PATH", value: `2`}}, nil, "duplicate"},
		{"a key folding to one the object holds", `{"k":1}`, []bmember{{key: "\u212a", value: `2`}}, nil, "duplicate"},
		{"two new keys alike", `{"a":1}`, []bmember{{key: "x", value: `1`}, {key: "X", value: `2`}}, nil, "duplicate"},
		{"over MaxElements", `{"a":[1,2]}`, []bmember{{key: "b", value: `[3]`}}, &Limits{MaxElements: 4}, "MaxElements"},
		{"at MaxElements", `{"a":[1,2]}`, []bmember{{key: "b", value: `3`}}, &Limits{MaxElements: 5}, ""},
		{"over MaxBytes", `{"a":1}`, []bmember{{key: "b", str: true, s: "0123456789"}}, &Limits{MaxBytes: 20}, "MaxBytes"},
		{"over MaxDepth", `{"a":[[1]]}`, []bmember{{key: "b", value: `[[[1]]]`}}, &Limits{MaxDepth: 3}, "MaxDepth"},
		{"over MaxStringBytes", `{"a":"xy"}`, []bmember{{key: "b", str: true, s: "xyz"}}, &Limits{MaxStringBytes: 2}, "MaxStringBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := appendBuild(t, []byte(tt.data), tt.members, tt.lim)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestBuilderAppendRefuses: BeginAppend changes nothing where it cannot append.
func TestBuilderAppendRefuses(t *testing.T) {
	var d, other Doc
	var b Builder
	// Members decoded under looser limits than the Builder's are not checked again.
	if err := d.Decode([]byte(`{"long":"0123456789"}`), nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range []Limits{{MaxStringBytes: 5}, {MaxBytes: 30}, {MaxDepth: 2}, {MaxElements: 100}} {
		if b.BeginAppend(&d, nil, &l) {
			t.Errorf("BeginAppend under %+v took a document decoded under the defaults", l)
		}
	}
	if d.Root().Kind() != Object {
		t.Fatal("a refused BeginAppend changed the document")
	}
	if !b.BeginAppend(&d, nil, &Limits{MaxBytes: DefaultMaxBytes * 2}) {
		t.Error("BeginAppend under looser limits refused")
	}
	if _, err := b.End(); err != nil {
		t.Fatal(err)
	}
	d = Doc{}
	if b.BeginAppend(&d, nil, nil) {
		t.Error("BeginAppend took an empty Doc")
	}
	b.Begin(&d, nil, nil)
	if b.BeginAppend(&d, nil, nil) {
		t.Error("BeginAppend took a Doc being built")
	}
	if _, err := b.End(); err != nil {
		t.Fatal(err)
	}
	if err := other.Decode([]byte(`{"a":1}`), nil); err != nil {
		t.Fatal(err)
	}
	if !b.BeginAppend(&d, nil, nil) {
		t.Fatal("BeginAppend refused a built object")
	}
	b.Keep(other.Root(), 0)
	b.Keep(other.Root(), 0) // twice: refused at End as a duplicate
	if _, err := b.End(); err == nil {
		t.Error("a member kept twice after BeginAppend was accepted")
	}
}

// FuzzBuilderAppend holds BeginAppend to Decode: members appended to a fuzzed object
// (values of another fuzzed document under fuzzed keys, and a string member) must give
// the text and the Doc that Decode gives for that text, and fail exactly when it fails.
func FuzzBuilderAppend(f *testing.F) {
	f.Add([]byte(`{"path":"/a","head":1}`), []byte(`{"encoding":"utf-8","n":[1,{"x":"\u00e9"}]}`), "PATH", "v", uint8(0))
	f.Add([]byte(` { } `), []byte(`{"a":{}}`), "a", "\u2028", uint8(3))
	f.Add([]byte(`{"k":1}`), []byte(`{"K":2}`), "\u212a", "", uint8(0x41))
	f.Fuzz(func(t *testing.T, data, more []byte, key, s string, lim uint8) {
		var d, src Doc
		if d.Decode(data, nil) != nil || src.Decode(more, nil) != nil {
			return
		}
		var members []bmember
		for k, v := range src.Root().Members() {
			members = append(members, bmember{key: k, value: v.Raw()})
		}
		members = append(members, bmember{key: key, str: true, s: s})
		var l *Limits
		if lim != 0 {
			l = &Limits{MaxDepth: int(lim&7) + 1, MaxElements: int(lim>>3&7*3) + 1, MaxStringBytes: int(lim>>6*4) + 1, MaxBytes: int(lim) * 2}
		}
		appendBuild(t, data, members, l)
	})
}

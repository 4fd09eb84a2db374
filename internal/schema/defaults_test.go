package schema

import "testing"

func TestDefault(t *testing.T) {
	const sch = `{"type":"object","properties":{
		"path":{"type":"string","default":"~/.ssh/id_rsa"},
		"opts":{"type":"object","properties":{"root":{"type":"string","default":"/etc"}},"default":{"root":"/var"}},
		"paths":{"type":"array","items":{"type":"string","default":"x"},"default":["/a","/b"]},
		"ref":{"$ref":"#/$defs/withDefault"},
		"either":{"anyOf":[{"type":"string","default":"one"},{"type":"number","default":2}]},
		"same":{"anyOf":[{"type":"string","default":"s"},{"type":"string","default":"s"}]},
		"none":{"type":"string"}
	},"$defs":{"withDefault":{"type":"string","default":"from-ref"}}}`
	s, err := Compile([]byte(sch), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pointer, want string
		ok            bool
		err           bool
	}{
		{"/path", `"~/.ssh/id_rsa"`, true, false},
		{"/opts", `{"root":"/var"}`, true, false},
		{"/opts/root", `"/etc"`, true, false},
		{"/paths", `["/a","/b"]`, true, false},
		{"/paths/*", `"x"`, true, false},
		{"/ref", `"from-ref"`, true, false},
		{"/either", ``, false, true},
		{"/same", `"s"`, true, false},
		{"/none", ``, false, false},
		{"/absent", ``, false, false},
	} {
		got, ok, err := s.Default(tc.pointer)
		if string(got) != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("Default(%s) = %s, %v, %v; want %s, %v, error %v", tc.pointer, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}

package engine

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
)

// The agent image's layer holds the check binary and every program, all
// executable, unpacked at /.
func TestLayerTarHoldsTheBinaryAndThePrograms(t *testing.T) {
	progs := []Program{{Path: ProgramPath("check-kubernetes"), Data: []byte("agent")}}
	b, err := layerTar([]byte("check"), progs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if h.Mode != 0o755 || h.Typeflag != tar.TypeReg {
			t.Errorf("%s: mode %o, type %c", h.Name, h.Mode, h.Typeflag)
		}
		got[h.Name] = string(data)
	}
	want := map[string]string{"usr/local/bin/check": "check", "usr/local/bin/check-kubernetes": "agent"}
	if len(got) != len(want) || got["usr/local/bin/check"] != "check" || got["usr/local/bin/check-kubernetes"] != "agent" {
		t.Errorf("the layer holds %v, want %v", got, want)
	}
}

// The image's tag covers every file of its layer: without programs it is
// the binary's sum, as it always was; a program's path or bytes change it,
// the order they are listed in does not.
func TestLayerSumCoversEveryBinary(t *testing.T) {
	bin := binarySum([]byte("check"))
	if got := layerSum(bin, nil); got != bin {
		t.Errorf("with no programs the layer's sum is %s, not the binary's %s", got, bin)
	}
	a := Program{Path: "/usr/local/bin/a", Data: []byte("a")}
	b := Program{Path: "/usr/local/bin/b", Data: []byte("b")}
	base := layerSum(bin, []Program{a, b})
	if base == bin {
		t.Error("the programs do not change the sum")
	}
	if layerSum(bin, []Program{b, a}) != base {
		t.Error("the programs' order changes the sum")
	}
	for name, other := range map[string]string{
		"another binary":      layerSum(binarySum([]byte("check2")), []Program{a, b}),
		"another program":     layerSum(bin, []Program{a, {Path: b.Path, Data: []byte("b2")}}),
		"a program moved":     layerSum(bin, []Program{a, {Path: "/usr/local/bin/c", Data: b.Data}}),
		"one program dropped": layerSum(bin, []Program{a}),
	} {
		if other == base {
			t.Errorf("%s leaves the sum as it was", name)
		}
	}
	if ProgramsSum(nil) != "" || ProgramsSum([]Program{a}) == ProgramsSum([]Program{b}) {
		t.Error("ProgramsSum does not tell programs apart")
	}
}

func TestSpecValidatesPrograms(t *testing.T) {
	ok := Spec{TestID: "t", Image: "i", Clients: 1, Binary: "/bin/check", Programs: []Program{{Path: ProgramPath("x"), Data: []byte("x")}}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	for want, bad := range map[string][]Program{
		"is not an absolute file path": {{Path: "usr/local/bin/x", Data: []byte("x")}},
		"two binaries for":             {{Path: BinaryPath, Data: []byte("x")}},
		"is empty":                     {{Path: ProgramPath("x")}},
	} {
		s := ok
		s.Programs = bad
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", bad, err, want)
		}
	}
	s := ok
	s.Binary = ""
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "no binary") {
		t.Errorf("programs without the check binary: %v", err)
	}
}

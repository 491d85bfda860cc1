package jsonerr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type manifest struct {
	Name     string   `json:"name"`
	Protocol int      `json:"protocol"`
	Command  []string `json:"command"`
	Build    []string `json:"build"`
}

func decode(s string) string {
	var m manifest
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return Message([]byte(s), dec.Decode(&m))
}

func TestMessagesNameTheFieldAndTheKind(t *testing.T) {
	for in, want := range map[string]string{
		`{"command": "python3 client.py"}`: `field "command" must be a list of strings, got a string`,
		`{"protocol": "1"}`:                `field "protocol" must be a number, got a string`,
		`{"protocol": 1.5}`:                `field "protocol" must be a whole number, got 1.5`,
		`{"name": 3}`:                      `field "name" must be a string, got a number`,
		`["a"]`:                            `must be a JSON object, got a list`,
		`{"nmae": "x"}`:                    `unknown field "nmae"`,
		"{\"name\": \"x\",\n  nope}":       `not valid JSON at line 2, column 3: invalid character 'n' looking for beginning of object key string`,
		`{"name": "x"`:                     `not complete JSON: the text ends inside a value`,
		``:                                 `empty: no JSON value at all`,
	} {
		got := decode(in)
		if !strings.HasPrefix(got, want) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
		if strings.Contains(got, "Go ") || strings.Contains(got, "[]string") || strings.Contains(got, "json:") {
			t.Errorf("%q: Go's words in %q", in, got)
		}
	}
	// Unmarshal (not a Decoder) reports a cut text as a syntax error.
	var m manifest
	b := []byte(`{"name": "x`)
	if got := Message(b, json.Unmarshal(b, &m)); !strings.HasPrefix(got, "not valid JSON at line 1, column") {
		t.Errorf("cut text: %q", got)
	}
	if got := Message(nil, bytes.ErrTooLarge); got != bytes.ErrTooLarge.Error() {
		t.Errorf("another error: %q", got)
	}
}

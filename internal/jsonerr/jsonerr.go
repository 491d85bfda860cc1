// Package jsonerr says in plain words what is wrong with JSON a user gave
// (a client's manifest, a results.json, a request to the fenced storage):
// where the text stops being JSON, or which field has the wrong kind of
// value and what it must be. Go's own messages name Go types ("cannot
// unmarshal string into Go struct field Manifest.command of type
// []string"), which a user of a JSON file cannot act on. It only phrases
// errors; it never decodes anything itself.
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Message says what is wrong, given the error decoding data returned
// (data, when not nil, places a syntax error by line and column). An
// error that is not about JSON is returned as its text.
func Message(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty: no JSON value at all"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not complete JSON: the text ends inside a value (cut short, or a bracket or quote left open)"
	case errors.As(err, &se):
		where := fmt.Sprintf("byte %d", se.Offset)
		if data != nil {
			where = position(data, se.Offset)
		}
		return fmt.Sprintf("not valid JSON at %s: %s", where, se.Error())
	case errors.As(err, &te):
		return typeMessage(te)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown field " + f
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// position is "line L, column C" of a byte offset (json counts the byte
// that failed, so the column is that byte's).
func position(data []byte, offset int64) string {
	offset = min(max(offset, 1), int64(len(data)))
	before := data[:offset-1]
	line := 1 + strings.Count(string(before), "\n")
	col := len(before) - strings.LastIndexByte(string(before), '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// typeMessage names the field, the kind of value it must hold and the one
// it got.
func typeMessage(te *json.UnmarshalTypeError) string {
	if te.Field == "" {
		// The whole value: say plainly that the text must be JSON's object.
		return "must be " + strings.Replace(want(te), "an object", "a JSON object", 1) + ", got " + kind(te.Value)
	}
	return fmt.Sprintf("field %q must be %s, got %s", te.Field, want(te), kind(te.Value))
}

// want is the kind of JSON value Go's type takes.
func want(te *json.UnmarshalTypeError) string {
	t := te.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if strings.HasPrefix(te.Value, "number ") {
			return "a whole number"
		}
		return "a number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.HasPrefix(te.Value, "number ") {
			return "a non-negative whole number"
		}
		return "a number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// kind names the JSON value json.UnmarshalTypeError describes ("string",
// "number -1", "array", ...).
func kind(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return v
}

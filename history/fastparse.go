package history

import (
	"encoding/json"
	"strconv"
)

// decodeFast reads the common shape of an event line — one flat object of
// the documented fields, lower-case keys once each, plain integers, ASCII
// strings without escapes, a client's value an integer — several times
// faster than encoding/json. Anything else (nemesis node lists, escapes,
// null, unknown or repeated keys, malformed input) returns false, and the
// caller decodes the line with encoding/json, which stays the authority on
// what is accepted and how errors read.
func decodeFast(b []byte, e *Event) bool {
	p := fastParser{b: b}
	*e = Event{}
	p.space()
	if !p.byte('{') {
		return false
	}
	var seen uint16
	first := true
	for {
		p.space()
		if p.byte('}') {
			break
		}
		if !first && !p.byte(',') {
			return false
		}
		first = false
		p.space()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if !p.byte(':') {
			return false
		}
		p.space()
		bit, ok := p.field(key, e)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	p.space()
	if p.i != len(p.b) || seen&fieldProcess == 0 {
		return false
	}
	// A nemesis event's value is a list of nodes, and the end event has
	// a shape of its own: leave them to encoding/json.
	if e.Type == End || (e.Process == NemesisProcess && e.Value != nil) {
		return false
	}
	return true
}

// The bits of the fields in decodeFast's seen set, which catches a
// repeated key (encoding/json would take the last one; the fast path
// leaves such a line to it).
const (
	fieldIndex uint16 = 1 << iota
	fieldTime
	fieldProcess
	fieldType
	fieldF
	fieldKey
	fieldToken
	fieldPrev
	fieldValue
	fieldError
	fieldCall
	fieldReturn
)

// field reads key's value into e and returns key's bit; ok is false for
// an unknown key or a value outside the fast path's shape.
func (p *fastParser) field(key string, e *Event) (bit uint16, ok bool) {
	switch key {
	case "index":
		e.Index, ok = p.int()
		return fieldIndex, ok
	case "time":
		e.Time, ok = p.int()
		return fieldTime, ok
	case "process":
		e.Process, ok = p.process()
		return fieldProcess, ok
	case "type":
		var s string
		s, ok = p.str()
		e.Type = Type(s)
		return fieldType, ok
	case "f":
		e.F, ok = p.str()
		return fieldF, ok
	case "key":
		e.Key, ok = p.str()
		return fieldKey, ok
	case "token":
		e.Token, ok = p.uint()
		return fieldToken, ok
	case "prev":
		e.Prev, ok = p.intPtr()
		return fieldPrev, ok
	case "value":
		e.Value, ok = p.intPtr()
		return fieldValue, ok
	case "error":
		e.Error, ok = p.str()
		return fieldError, ok
	case "call":
		e.Call, ok = p.int()
		return fieldCall, ok
	case "return":
		e.Return, ok = p.int()
		return fieldReturn, ok
	}
	return 0, false
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *fastParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes.
func (p *fastParser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
		p.i++
	}
	return "", false
}

// int reads an integer as JSON writes it: an optional minus, then 0 or
// digits without a leading zero; no fraction or exponent.
func (p *fastParser) int() (int64, bool) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || (n > 1 && p.b[digits] == '0') {
		return 0, false
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	return v, err == nil
}

// uint reads a token: an integer that is not negative.
func (p *fastParser) uint() (uint64, bool) {
	v, ok := p.int()
	return uint64(v), ok && v >= 0
}

// intPtr reads an integer for an optional field (prev, value).
func (p *fastParser) intPtr() (*int64, bool) {
	v, ok := p.int()
	return &v, ok
}

// process reads a process: "nemesis", or a client's number up to 2^31-1
// (a larger one is left to encoding/json).
func (p *fastParser) process() (int, bool) {
	if p.peek() == '"' {
		s, ok := p.str()
		return NemesisProcess, ok && s == "nemesis"
	}
	v, ok := p.int()
	return int(v), ok && v >= 0 && v <= 1<<31-1
}

// AppendJSON appends the event's line (without the newline) to b: the
// same bytes as json.Marshal writes, several times faster for the common
// client event; anything else goes through json.Marshal.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	if e.Type == End || e.IsNemesis() || !plain(string(e.Type)) || !plain(e.F) || !plain(e.Key) || !plain(e.Error) {
		m, err := json.Marshal(e)
		return append(b, m...), err
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, e.Index, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = append(b, `,"process":`...)
	b = strconv.AppendInt(b, int64(e.Process), 10)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type...)
	b = append(b, `","f":"`...)
	b = append(b, e.F...)
	b = append(b, '"')
	if e.Key != "" {
		b = append(b, `,"key":"`...)
		b = append(b, e.Key...)
		b = append(b, '"')
	}
	if e.Token != 0 || e.F == Read || e.F == Write || (e.F == Acquire && e.Type == OK) {
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, e.Token, 10)
	}
	if e.Prev != nil {
		b = append(b, `,"prev":`...)
		b = strconv.AppendInt(b, *e.Prev, 10)
	}
	if e.Value != nil {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, *e.Value, 10)
	}
	if e.Error != "" {
		b = append(b, `,"error":"`...)
		b = append(b, e.Error...)
		b = append(b, '"')
	}
	if e.Call != 0 {
		b = append(b, `,"call":`...)
		b = strconv.AppendInt(b, e.Call, 10)
	}
	if e.Return != 0 {
		b = append(b, `,"return":`...)
		b = strconv.AppendInt(b, e.Return, 10)
	}
	return append(b, '}'), nil
}

// plain reports whether json.Marshal writes s as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

package command

import (
	"iter"
	"math/bits"
	"strconv"
	"strings"
)

// Codes is a set of result codes: the outcomes a store operation may
// answer (Op.Codes), so a face can know it answers every one of them.
type Codes uint32

// always is what every command may answer, so every row's Codes holds it:
// CodeStorage when the state machine could not read or write its state (a
// bbolt failure, a stored value that does not decode, the request-id
// memory failing), and CodeBadCommand for an entry that does not decode to
// a valid command of this build, or whose payload (a list, a transaction,
// a script's effects) does not.
const always = Codes(1<<CodeStorage | 1<<CodeBadCommand)

// CodesOf is the set of cs.
func CodesOf(cs ...Code) Codes {
	var s Codes
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// All yields the codes of s in ascending order.
func (s Codes) All() iter.Seq[Code] {
	return func(yield func(Code) bool) {
		for r := uint32(s); r != 0; r &= r - 1 {
			if !yield(Code(bits.TrailingZeros32(r))) {
				return
			}
		}
	}
}

// String is the codes' numbers, e.g. "{0 1 3}", for a test's message.
func (s Codes) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for c := range s.All() {
		if b.Len() > 1 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(c)))
	}
	b.WriteByte('}')
	return b.String()
}

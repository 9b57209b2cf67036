package history

import (
	"github.com/anishathalye/porcupine"
)

// ValueModel is Model for clients that see values and never versions (the
// Redis protocol: SET answers OK, GET a value). A write's version is taken
// to be the next one, a read's the one the key has, so only what such a
// client can observe is checked: values, existence, and which SETNX won.
var ValueModel = porcupine.NondeterministicModel{
	Partition:         Model.Partition,
	Init:              Model.Init,
	DescribeOperation: Model.DescribeOperation,
	Step: func(st, in, out interface{}) []interface{} {
		s, o := st.(state), out.(Output)
		if !o.Unknown && o.OK {
			switch in.(Input).Kind {
			case SetNX, Set:
				o.Version = s.version + 1
			case Get:
				o.Version = s.version
				if s.vUnknown {
					o.Version++
				}
			}
		}
		return Model.Step(st, in, o)
	},
}

// CheckValues checks a history of ValueModel; a timeout counts as a
// failure.
func CheckValues(ops []porcupine.Operation, timeout int64) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(ValueModel.ToModel(), ops, durationNS(timeout))
}

package wire

import "strconv"

var packetKindNames = [...]string{PEvent: "event", PBegin: "begin", PEnd: "end", PWhole: "whole",
	PSample: "sample", PEntityBegin: "entity-begin", PEntityEnd: "entity-end", PResultBegin: "result-begin", PResultEnd: "result-end",
	PResultEvent: "result-event", PResultStart: "result-start", PResultLoss: "result-loss", PResultLost: "result-lost"}

func (k PacketKind) String() string {
	if int(k) < len(packetKindNames) && packetKindNames[k] != "" {
		return packetKindNames[k]
	}
	return "PacketKind(" + strconv.Itoa(int(k)) + ")"
}

var valueKindNames = [...]string{VEntity: "entity", VInt: "int", VFloat: "float", VString: "string",
	VBool: "bool", VTime: "time", VDuration: "duration", VEnum: "enum"}

func (k ValueKind) String() string {
	if int(k) < len(valueKindNames) && valueKindNames[k] != "" {
		return valueKindNames[k]
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

var commandKindNames = [...]string{CEnable: "enable", CDisable: "disable", CEnableAll: "enable-all",
	CDisableAll: "disable-all", CTrigger: "trigger", CUntrigger: "untrigger", CSample: "sample",
	CUnsample: "unsample", CLease: "lease", CBye: "bye", CFragment: "fragment", CUnfragment: "unfragment", CPlan: "plan"}

func (k CommandKind) String() string {
	if int(k) < len(commandKindNames) && commandKindNames[k] != "" {
		return commandKindNames[k]
	}
	return "CommandKind(" + strconv.Itoa(int(k)) + ")"
}

var predOpNames = [...]string{PAnd: "and", POr: "or", PNot: "not", PEq: "=", PNe: "!=", PLt: "<",
	PLe: "<=", PGt: ">", PGe: ">=", PPrefix: "prefix"}

func (o PredOp) String() string {
	if int(o) < len(predOpNames) && predOpNames[o] != "" {
		return predOpNames[o]
	}
	return "PredOp(" + strconv.Itoa(int(o)) + ")"
}

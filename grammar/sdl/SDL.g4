// SDL: the sensor-description language of tqmon (see docs/sdl.md).
//
// This grammar only recognises the text; the Go converter in parse.go walks
// the parse tree, builds the AST of ast.go and checks what the grammar
// leaves loose (counter values, duration values). Regenerate with
// `make grammar` after editing; never edit the files under gen/.
//
// Keywords are case-insensitive; names are case-sensitive. A keyword may be
// used as a name wherever a name is expected (relation, attribute, entity
// type and enum member names), except `enum` as a type name.
//
// New statements are added as further alternatives of stmt, each starting
// with its own keyword. A sensor binding says where a relation's sensor
// lives (a kernel tracepoint, a uprobe) and how its attributes are read
// there:
//
//   sensor Syscall at tracepoint raw_syscalls:sys_enter
//       (Process = tgid, Thread = pid, Name = syscall(arg1))
//   sensor SyscallCall
//       from tracepoint raw_syscalls:sys_enter (Process = tgid, Name = syscall(arg1))
//       to tracepoint raw_syscalls:sys_exit (Result = arg1)
//   sensor Call at uprobe "/usr/bin/prog" "main.work" (Process = tgid, N = arg0)

grammar SDL;

// ---------------------------------------------------------------- parser

spec
    : (stmt | SEMI)* EOF
    ;

// Decisions are left-factored so that each is made on one token: a syntax
// error is then reported at the offending token with what was expected.
stmt
    : ENTITY (TYPE name (COMMA name)* | relation) # entityStmt
    | cls = (EVENT | INTERVAL) relation           # relationStmt
    | CLOCK DURATION                              # clockStmt
    | SENSOR name (AT probeClause | FROM probeClause TO probeClause) # sensorStmt
    ;

// A probe, the attributes it fills, the key that pairs an interval's begin
// with its end, and the conditions under which it fires.
probeClause
    : probe binds? (KEY bexpr)? (WHEN test (AND test)*)?
    ;

probe
    : TRACEPOINT name COLON name              # tracepointProbe
    | kind = (UPROBE | URETPROBE) STRING STRING # uprobeProbe
    ;

binds
    : LPAREN bind (COMMA bind)* RPAREN
    ;

bind
    : name EQ bexpr
    ;

test
    : bexpr op = (EQ | NE | LT | LE | GT | GE) NUMBER # compareTest
    | bexpr IN LPAREN NUMBER (COMMA NUMBER)* RPAREN   # inTest
    ;

// A value read at the probe: a name (pid, tgid, cpu, comm, arg0…, ret),
// a path through kernel structures (arg1.tgid), a conversion (syscall(arg1)),
// a number, and a mask (arg3 & 128).
bexpr
    : bterm (AMP NUMBER)?
    ;

bterm
    : name (LPAREN bexpr RPAREN | (DOT name)*) # refTerm
    | NUMBER                                   # numTerm
    ;

relation
    : RELATION name LPAREN attr (COMMA attr)* RPAREN strategy?
    ;

attr
    : name COLON typeRef role?
    ;

typeRef
    : ENUM LPAREN name (COMMA name)* RPAREN # enumType
    | typeName                              # namedType
    ;

role
    : PERFORMER
    | INITIATOR
    | TARGET
    ;

strategy
    : (TRACED (THEN DISABLED)? | SAMPLED) ON role (COUNTER NUMBER)?
    ;

// Any keyword may be a name.
name
    : typeName
    | ENUM
    ;

// A type: a builtin (int, float, string, bool, time, duration) or an entity
// type name; every keyword but `enum`.
typeName
    : IDENT
    | ENTITY | TYPE | RELATION | EVENT | INTERVAL
    | PERFORMER | INITIATOR | TARGET
    | TRACED | SAMPLED | THEN | DISABLED | ON | COUNTER | CLOCK
    | SENSOR | AT | FROM | TO | TRACEPOINT | UPROBE | URETPROBE | KEY | WHEN | AND | IN
    ;

// ---------------------------------------------------------------- lexer

ENTITY    : E N T I T Y ;
TYPE      : T Y P E ;
RELATION  : R E L A T I O N ;
EVENT     : E V E N T ;
INTERVAL  : I N T E R V A L ;
ENUM      : E N U M ;
PERFORMER : P E R F O R M E R ;
INITIATOR : I N I T I A T O R ;
TARGET    : T A R G E T ;
TRACED    : T R A C E D ;
SAMPLED   : S A M P L E D ;
THEN      : T H E N ;
DISABLED  : D I S A B L E D ;
ON        : O N ;
COUNTER   : C O U N T E R ;
CLOCK     : C L O C K ;
SENSOR    : S E N S O R ;
AT        : A T ;
FROM      : F R O M ;
TO        : T O ;
TRACEPOINT: T R A C E P O I N T ;
UPROBE    : U P R O B E ;
URETPROBE : U R E T P R O B E ;
KEY       : K E Y ;
WHEN      : W H E N ;
AND       : A N D ;
IN        : I N ;

// As in TQuel: 10s, 5ms, 1h30m, 1.5s; a number run into letters is one
// malformed token reported by the Go side.
DURATION : (DIGITS ('.' DIGITS)? UNIT)+ ;

NUMBER : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? ;

BAD_NUMBER
    : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? [a-zA-Z_\u00B5\u03BC] [a-zA-Z_0-9\u00B5\u03BC]* -> type(NUMBER)
    ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

// Escapes are checked (and resolved) by the Go side.
STRING : '"' (ESC | ~["\\\r\n])* '"' ;

// A string that runs into the end of the line or the input: emitted as a
// STRING without its closing quote; the Go side reports it.
UNTERMINATED_STRING : '"' (ESC | ~["\\\r\n])* '\\'? -> type(STRING) ;

LPAREN : '(' ;
RPAREN : ')' ;
COMMA  : ',' ;
COLON  : ':' ;
SEMI   : ';' ;
EQ     : '=' ;
NE     : '!=' ;
LE     : '<=' ;
LT     : '<' ;
GE     : '>=' ;
GT     : '>' ;
AMP    : '&' ;
DOT    : '.' ;

COMMENT : ('--' | '//') ~[\r\n]* -> skip ;
WS      : [ \t\r\n\f]+ -> skip ;

// Anything else: reported ("unexpected character") and dropped by the Go
// side, so the lexer itself never fails.
ERROR_CHAR : . ;

fragment DIGITS : [0-9]+ ;
fragment ESC    : '\\' ~[\r\n] ;
fragment UNIT   : 'ns' | 'us' | '\u00B5s' | '\u03BCs' | 'ms' | 's' | 'm' | 'h' ;

fragment A : [aA] ;
fragment B : [bB] ;
fragment C : [cC] ;
fragment D : [dD] ;
fragment E : [eE] ;
fragment F : [fF] ;
fragment G : [gG] ;
fragment H : [hH] ;
fragment I : [iI] ;
fragment J : [jJ] ;
fragment K : [kK] ;
fragment L : [lL] ;
fragment M : [mM] ;
fragment N : [nN] ;
fragment O : [oO] ;
fragment P : [pP] ;
fragment Q : [qQ] ;
fragment R : [rR] ;
fragment S : [sS] ;
fragment T : [tT] ;
fragment U : [uU] ;
fragment V : [vV] ;
fragment W : [wW] ;
fragment X : [xX] ;
fragment Y : [yY] ;
fragment Z : [zZ] ;

// SDL: the sensor-description language of tqmon (see SDL.md).
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
// New statements (e.g. sensor bindings such as
// `sensor Name at tracepoint sys:event (...)`) are added as further
// alternatives of stmt, each starting with its own keyword.

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

// As in TQuel: 10s, 5ms, 1h30m, 1.5s; a number run into letters is one
// malformed token reported by the Go side.
DURATION : (DIGITS ('.' DIGITS)? UNIT)+ ;

NUMBER : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? ;

BAD_NUMBER
    : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? [a-zA-Z_\u00B5\u03BC] [a-zA-Z_0-9\u00B5\u03BC]* -> type(NUMBER)
    ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

LPAREN : '(' ;
RPAREN : ')' ;
COMMA  : ',' ;
COLON  : ':' ;
SEMI   : ';' ;

COMMENT : ('--' | '//') ~[\r\n]* -> skip ;
WS      : [ \t\r\n\f]+ -> skip ;

// Anything else: reported ("unexpected character") and dropped by the Go
// side, so the lexer itself never fails.
ERROR_CHAR : . ;

fragment DIGITS : [0-9]+ ;
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

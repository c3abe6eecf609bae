// The display-specification language of tqmon: how the tuples of primitive
// and derived relations are drawn and animated (see doc.go).
//
// This grammar only recognises the text; the Go converter in parse.go walks
// the parse tree, builds the AST of ast.go and checks what the grammar
// leaves loose (percentages, durations, which representation a mapping
// belongs to). Whether relations and attributes exist is for the checker
// (display/spec). Regenerate with `make grammar` after editing; never edit
// the files under gen/.
//
// Keywords are case-insensitive; names are case-sensitive. A name always
// stands where a name is required (never where it is optional), so every
// keyword may also be used as a name: `display Text as text label Text`.

grammar Display;

// ---------------------------------------------------------------- parser

spec
    : (stmt | SEMI)* EOF
    ;

// Decisions are left-factored so that each is made on one token: a syntax
// error is then reported at the offending token with what was expected.
stmt
    : DISPLAY name AS rep aspect*      # displayStmt
    | TIME timeMode (DECAY DURATION)?  # timeStmt
    | SHOW what = (CLOCK | TIMELINE)   # showStmt
    ;

// A rule of its own: a token set followed by more of the statement would
// report its error where the parser stands after it.
timeMode
    : ANIMATION
    | ANIMATIONTRACE
    ;

// How each tuple is drawn: an icon of its own, a relationship between the
// icons of the entities it names, a flash of one, or a point of a plot of
// a numeric attribute over time.
rep
    : shape = (BOX | CIRCLE | OVAL | TEXT | POINT) # iconRep
    | LINE (FROM name TO name)?                    # lineRep
    | INSIDE LPAREN name COMMA name RPAREN         # insideRep
    | ARROW FROM name TO name                      # arrowRep
    | how = (FLASH | BLINK) name                   # flashRep
    | PLOT name                                    # plotRep
    ;

// Aspects coupled to attributes (label, shade, colour, order), the fixed
// position, and how long a flash lasts.
aspect
    : LABEL name                              # labelAspect
    | SHADE name mapping?                     # shadeAspect
    | (COLOUR | COLOR) name mapping?          # colourAspect
    | ORDER BY name dir = (ASC | DESC)?       # orderAspect
    | AT side = (LEFT | CENTER | RIGHT)       # atAspect
    | FOR DURATION                            # forAspect
    ;

// (Running = 100%, Ready = 60%) or (Running = green, Waiting = red).
mapping
    : LPAREN entry (COMMA entry)* RPAREN
    ;

entry
    : key EQ (NUMBER PERCENT | name)
    ;

key
    : name
    | STRING
    | NUMBER
    ;

// Any keyword may be a name.
name
    : IDENT
    | DISPLAY | AS | TIME | SHOW | ANIMATION | ANIMATIONTRACE | DECAY | CLOCK | TIMELINE
    | BOX | CIRCLE | OVAL | TEXT | POINT | LINE | INSIDE | ARROW | FLASH | BLINK
    | FROM | TO | LABEL | SHADE | COLOUR | COLOR | ORDER | BY | ASC | DESC
    | AT | LEFT | CENTER | RIGHT | FOR | PLOT
    ;

// ---------------------------------------------------------------- lexer

DISPLAY        : D I S P L A Y ;
AS             : A S ;
TIME           : T I M E ;
SHOW           : S H O W ;
ANIMATION      : A N I M A T I O N ;
ANIMATIONTRACE : A N I M A T I O N T R A C E ;
DECAY          : D E C A Y ;
CLOCK          : C L O C K ;
TIMELINE       : T I M E L I N E ;
BOX            : B O X ;
CIRCLE         : C I R C L E ;
OVAL           : O V A L ;
TEXT           : T E X T ;
POINT          : P O I N T ;
LINE           : L I N E ;
INSIDE         : I N S I D E ;
ARROW          : A R R O W ;
FLASH          : F L A S H ;
BLINK          : B L I N K ;
FROM           : F R O M ;
TO             : T O ;
LABEL          : L A B E L ;
SHADE          : S H A D E ;
COLOUR         : C O L O U R ;
COLOR          : C O L O R ;
ORDER          : O R D E R ;
BY             : B Y ;
ASC            : A S C ;
DESC           : D E S C ;
AT             : A T ;
LEFT           : L E F T ;
CENTER         : C E N T E R | C E N T R E ;
RIGHT          : R I G H T ;
FOR            : F O R ;
PLOT           : P L O T ;

// As in TQuel: 10s, 5ms, 1h30m, 1.5s; a number run into letters is one
// malformed token reported by the Go side.
DURATION : (DIGITS ('.' DIGITS)? UNIT)+ ;

NUMBER : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? ;

BAD_NUMBER
    : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? [a-zA-Z_\u00B5\u03BC] [a-zA-Z_0-9\u00B5\u03BC]* -> type(NUMBER)
    ;

// Escapes are checked (and resolved) by the Go side.
STRING : '"' (ESC | ~["\\\r\n])* '"' ;

// A string that runs into the end of the line or the input: emitted as a
// STRING without its closing quote; the Go side reports it.
UNTERMINATED_STRING : '"' (ESC | ~["\\\r\n])* '\\'? -> type(STRING) ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

LPAREN  : '(' ;
RPAREN  : ')' ;
COMMA   : ',' ;
EQ      : '=' ;
PERCENT : '%' ;
SEMI    : ';' ;

COMMENT : ('--' | '//') ~[\r\n]* -> skip ;
WS      : [ \t\r\n\f]+ -> skip ;

// Anything else: reported ("unexpected character") and dropped by the Go
// side, so the lexer itself never fails.
ERROR_CHAR : . ;

fragment DIGITS : [0-9]+ ;
fragment UNIT   : 'ns' | 'us' | '\u00B5s' | '\u03BCs' | 'ms' | 's' | 'm' | 'h' ;
fragment ESC    : '\\' ~[\r\n] ;

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

// TQuel: the query language of tqmon (see docs/tquel.md).
//
// This grammar only recognises the text. The Go converter in parse.go walks
// the parse tree and builds the AST of ast.go; it also enforces what the
// grammar deliberately leaves loose (clause multiplicity, value versus
// temporal context, non-associative comparisons). Regenerate with
// `make grammar` after editing; never edit the files under gen/.
//
// Expressions: ONE precedence-climbing rule (expr) covers value
// expressions, temporal expressions and predicates, so that `( ... )` and
// `overlap` need no syntactic decision between them. Precedence, tightest
// first (alternative order below):
//
//   begin of X, end of X      prefix; X is a primary or a prefix operation
//   -X                        prefix
//   * / %                     left
//   + -                       left
//   overlap extend            left
//   = != <> < <= > >= precede equal
//                             non-associative (the converter rejects a chain)
//   not X                     prefix
//   and                       left
//   or                        left
//
// Keywords are case-insensitive; names are case-sensitive. Keywords may
// also be used as names where that stays unambiguous: any keyword but `all`
// as a relation, target or attribute name, most as the result name, and
// the harmless ones (of is into unique at from each instant ever, and the
// aggregate names) as range variables and bare-name operands. See the name
// rules at the end of the parser section.

grammar TQuel;

// ---------------------------------------------------------------- parser

file
    : (stmt | SEMI)* EOF
    ;

stmt
    : RANGE OF exprName IS name (LBRACK NUMBER RBRACK)?                               # rangeStmt
    | RETRIEVE INTO? resultName? UNIQUE? LPAREN target (COMMA target)* RPAREN clause* # retrieveStmt
    ;

// Decisions are left-factored so that each is made on one token: a syntax
// error is then reported at the offending token with what was expected.
target
    : name ((EQ | IS) expr | DOT (name | ALL))
    ;

clause
    : VALID (AT expr | FROM expr TO expr) # validClause
    | WHERE expr             # whereClause
    | WHEN expr              # whenClause
    | AS OF expr             # asOfClause
    ;

expr
    : primary                                                     # primaryExpr
    | op = (BEGIN | END) OF expr                                  # timeOfExpr
    | MINUS expr                                                  # negExpr
    | expr op = (STAR | SLASH | PERCENT) expr                     # mulExpr
    | expr op = (PLUS | MINUS) expr                               # addExpr
    | expr op = (OVERLAP | EXTEND) expr                           # overlapExpr
    | expr op = (EQ | NE | LT | LE | GT | GE | PRECEDE | EQUAL) expr # cmpExpr
    | NOT expr                                                    # notExpr
    | expr AND expr                                               # andExpr
    | expr OR expr                                                # orExpr
    ;

primary
    : AGG LPAREN expr aggParam? (BY expr (COMMA expr)*)? aggClause* RPAREN # aggregate
    | exprName (DOT (name | ALL))?                               # nameRef
    | NUMBER                                                     # numberLit
    | DURATION                                                   # durationLit
    | STRING                                                     # stringLit
    | PARAM                                                      # paramRef
    | LPAREN expr RPAREN                                         # parenExpr
    ;

// The second argument of percentile (p) and histogram (the bucket width).
aggParam
    : COMMA expr
    ;

aggClause
    : FOR (EACH (INSTANT | DURATION) | EVER) # windowClause
    | WHERE expr             # aggWhere
    | WHEN expr              # aggWhen
    ;

// A name where nothing else can stand: relations, target names, attributes
// after '.'. Every keyword but `all` (which after '.' is the Var.all form).
name
    : IDENT
    | AGG
    | keyword
    ;

// The optional result name of a retrieve: not `into` or `unique`, which
// would make `retrieve into (...)` and `retrieve unique (...)` ambiguous.
resultName
    : IDENT
    | AGG
    | RANGE | OF | IS | RETRIEVE | VALID | AT | FROM | TO | WHERE | WHEN | AS
    | AND | OR | NOT | PRECEDE | OVERLAP | EQUAL | EXTEND | BEGIN | END | BY
    | FOR | EACH | INSTANT | EVER
    ;

// A range variable, declared and used as an operand (a bare name operand
// may also be an entity literal such as P1). An aggregate name followed by
// '(' is an aggregate. `not` is left out as `not - x` would be ambiguous;
// the other keywords that start a statement or clause, act as operators or
// delimit a clause are left out as they would make texts hard to read and
// error recovery poor.
exprName
    : IDENT
    | AGG
    | OF | IS | INTO | UNIQUE | AT | FROM | EACH | INSTANT | EVER
    ;

keyword
    : RANGE | OF | IS | RETRIEVE | INTO | UNIQUE | VALID | AT | FROM | TO
    | WHERE | WHEN | AS | AND | OR | NOT | PRECEDE | OVERLAP | EQUAL | EXTEND
    | BEGIN | END | BY | FOR | EACH | INSTANT | EVER
    ;

// ---------------------------------------------------------------- lexer

RANGE    : R A N G E ;
OF       : O F ;
IS       : I S ;
RETRIEVE : R E T R I E V E ;
INTO     : I N T O ;
UNIQUE   : U N I Q U E ;
VALID    : V A L I D ;
AT       : A T ;
FROM     : F R O M ;
TO       : T O ;
WHERE    : W H E R E ;
WHEN     : W H E N ;
AS       : A S ;
AND      : A N D ;
OR       : O R ;
NOT      : N O T ;
PRECEDE  : P R E C E D E ;
OVERLAP  : O V E R L A P ;
EQUAL    : E Q U A L ;
EXTEND   : E X T E N D ;
BEGIN    : B E G I N ;
END      : E N D ;
BY       : B Y ;
FOR      : F O R ;
EACH     : E A C H ;
INSTANT  : I N S T A N T ;
EVER     : E V E R ;
ALL      : A L L ;

// Aggregate function names; the converter maps the text (any case).
AGG
    : C O U N T U?
    | S U M U?
    | A V G U?
    | M I N
    | M A X
    | A N Y
    | S T D D E V
    | P E R C E N T I L E
    | H I S T O G R A M
    ;

// A duration is one or more number-unit groups: 10s, 5ms, 1h30m, 1.5s.
// Listed before NUMBER so that the longest match, then the first rule,
// makes `10s` a duration.
DURATION : (DIGITS ('.' DIGITS)? UNIT)+ ;

NUMBER : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? ;

// A number run into letters (10min, 1h30, 1e5s) is one malformed token,
// reported by the Go side, rather than a number followed by a name.
BAD_NUMBER
    : DIGITS ('.' DIGITS)? ([eE] [+-]? DIGITS)? [a-zA-Z_\u00B5\u03BC] [a-zA-Z_0-9\u00B5\u03BC]* -> type(NUMBER)
    ;

// Escapes are checked (and resolved) by the Go side.
STRING : '"' (ESC | ~["\\\r\n])* '"' ;

// A string that runs into the end of the line or the input: emitted as a
// STRING without its closing quote; the Go side reports it.
UNTERMINATED_STRING : '"' (ESC | ~["\\\r\n])* '\\'? -> type(STRING) ;

PARAM : '$' [a-zA-Z_] [a-zA-Z_0-9]* ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

EQ      : '=' ;
NE      : '!=' | '<>' ;
LE      : '<=' ;
GE      : '>=' ;
LT      : '<' ;
GT      : '>' ;
PLUS    : '+' ;
MINUS   : '-' ;
STAR    : '*' ;
SLASH   : '/' ;
PERCENT : '%' ;
LPAREN  : '(' ;
RPAREN  : ')' ;
LBRACK  : '[' ;
RBRACK  : ']' ;
COMMA   : ',' ;
DOT     : '.' ;
SEMI    : ';' ;

COMMENT : '--' ~[\r\n]* -> skip ;
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

A multiplication table from 1 times 1 to 15 times 15
Written by hand for the shimlab corpus: a number printer (divmod by ten
twice; leading zeros printed as spaces) inside two counting loops; each
product is the one before plus the row number (a copy loop)

cells   0 rows left    1 row number a    2 columns left    3 product p
        4 temp    6 to 11 divmod one (n c r q f t)    12 to 17 divmod two
        18 z (hundreds printed)    19 m    20 e (else flag)    21 x temp
        22 space    23 newline

divmod at n with c r q f t to its right: n goes to zero; r gets n mod ten
and q gets n div ten; c counts down from ten and is left over (cleared after)

+++++++++++++++                               cell 0 = 15 rows
>>>>>>>>>>>>>>>>>>>>>++++[->++++++++<]        cell 22 = 32 (space)
>>++++++++++                                  cell 23 = 10 (newline)
<<<<<<<<<<<<<<<<<<<<<<<                       back to cell 0
[                                             for each row
  -
  >+                                          a up by one
  >+++++++++++++++                            15 columns
  [                                           for each column
    -
    <[->>+>+<<<]>>>[-<<<+>>>]                 p up by a (a kept through the temp)
    <[->+>>+<<<]>[-<+>]                       n = p (p kept)
    >>                                        at n (cell 6)
    >++++++++++<
    [->->+>>+<<<[>>>-<<<[->>>>+<<<<]]>>>>[-<<<<+>>>>]<[-<<<++++++++++>[-]>+>]<<<<]
    >[-]<                                     divmod one done: ones in r (cell 8)
    >>>[->>>+<<<]>>>                          its quotient to cell 12
    >++++++++++<
    [->->+>>+<<<[>>>-<<<[->>>>+<<<<]]>>>>[-<<<<+>>>>]<[-<<<++++++++++>[-]>+>]<<<<]
    >[-]<                                     tens in cell 14 and hundreds in cell 15
    >>>>>>>>>>.                               a space before each number
    <<<<<<<                                   hundreds (cell 15)
    >>>>>+<<<<<                               e = 1
    [>>>+>>-<<<<<>++++++[-<++++++++>]<.[-]]   if hundreds: z = 1 and e = 0 and print it
    >>>>>[->>.<<]                             else a space
    <<[->+>>+<<<]>>>[-<<<+>>>]                m = z
    <<<<<<<[->>>>>+>>+<<<<<<<]>>>>>>>[-<<<<<<<+>>>>>>>]   m up by tens
    <+<                                       e = 1; at m
    [[-]>-<<<<<<>++++++[-<++++++++>]<.[-]>>>>>]   if tens or hundreds: print tens
    >[->>.<<]                                 else a space
    <<<<<<<<<<<<>++++++[-<++++++++>]<.[-]     the ones always
    >>>>>>>>>>[-]                             z = 0
    <<<<<<<<<<<<<<<<                          back to the column count
  ]
  >[-]<                                       p = 0
  >>>>>>>>>>>>>>>>>>>>>.<<<<<<<<<<<<<<<<<<<<< a newline
  <<
]

Prints which pairs of numbers from 1 to 100 are coprime (a hash mark) or
not (a dot): a hundred rows of a hundred
Written by hand for the shimlab corpus: each gcd by subtraction; x and y
count down together until one runs out; what is left over and how far they
went are the next pair; until nothing is left over

cells   0 rows left    1 row number a    2 columns left    3 column number b
        4 temp    10 x    11 y    12 flag    13 zero (else flag later)
        14 how far    15 left over of x    16 hash mark    17 dot
        18 newline

>>>>>>>>>>>>>>>+++++[->+++++++>+++++++++<<]   cell 16 = 35 and cell 17 = 45
>>+>++++++++++                                 cell 17 = 46; cell 18 = 10
<<<<<<<<<<<<<<<<<<                             back to cell 0
++++++++++[->++++++++++<]>[-<+>]<              100 rows
[                                              for each row
  -
  >+                                           a up by one
  >++++++++++[->++++++++++<]>[-<+>]<           100 columns
  [                                            for each column
    -
    >+                                         b up by one
    <<[->>>+>>>>>>+<<<<<<<<<]>>>[-<<<+>>>]     x = a
    <[->+>>>>>>>+<<<<<<<<]>[-<+>]              y = b
    >>>>>>>                                    at y
    [                                          while something is left over
      <
      [->->>>+<<<>+<[>-]>[-<<[->>>>>+<<<<<]>>>]<<<]   count x and y down together
      >>>>[-<<<<+>>>>]                         x = how far
      >[-<<<<+>>>>]                            y = what is left over
      <<<<
    ]
    +<-                                        flag = 1; x = gcd less one
    >>>+<<<                                    else flag = 1
    [>-]>[->>>>>.<<<<<>>-<<>]                  gcd is one: a hash mark
    >[->>>>.<<<<]                              else a dot
    <<<[-]                                     x = 0
    <<<<<<<<                                   back to the columns
  ]
  >[-]<                                        b = 0
  >>>>>>>>>>>>>>>>.<<<<<<<<<<<<<<<<            newline
  <<
]

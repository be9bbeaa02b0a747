Prints the primes below 256 by trial division
Written by hand for the shimlab corpus: every n from 2 to 255 is divided
by every d from 2 to n minus 1 with no early way out (a remainder by
counting down a copy of d while a copy of n counts down; the test for zero
is the flag idiom that leaves the head one place whatever the answer); n
is printed in decimal when no division left nothing over

cells   0 numbers left    1 n    2 divisors left    3 d    4 prime flag
        5 w (copy of n)    6 c (countdown from d)    7 a (flag)    8 b (zero)
        9 t temp    10 k (c was just reset)    11 to 16 and 17 to 22 two
        divmods    23 z    24 m    26 x temp    28 newline

>>>>>>>>>>>>>>>>>>>>>>>>>>>>++++++++++         cell 28 = 10 (newline)
<<<<<<<<<<<<<<<<<<<<<<<<<<<<                   back to cell 0
-->+<                                          254 numbers; n starts at 1
[                                              for each n
  -
  >+                                           n up by one
  >>>+                                         prime flag = 1
  <<<[->+>>>>>>>+<<<<<<<<]>>>>>>>>[-<<<<<<<<+>>>>>>>>]   divisors left = n
  <<<<<<<-->+<                                 less two; d starts at 1
  [                                            for each d
    -
    >+                                         d up by one
    <<[->>>>+>>>>+<<<<<<<<]>>>>>>>>[-<<<<<<<<+>>>>>>>>]  w = n
    <<<<<<[->>>+>>>+<<<<<<]>>>>>>[-<<<<<<+>>>>>>]        c = d
    <<<<                                       at w
    [                                          count w down
      -
      >>>>>[-]                                 k = 0
      <<<<-                                    c down
      >+<[>-]>                                 a = 1; left on b when c is not zero
      [-<<<<[->>>+>>>+<<<<<<]>>>>>>[-<<<<<<+>>>>>>]>+<<<>]   else c = d and k = 1
      <<<                                      back to w from b
    ]
    >>>>>[-<<<<<<[-]>>>>>>]                    d divides n: not a prime
    <<<<[-]                                    c = 0
    <<<<
  ]
  >[-]                                         d = 0
  >
  [                                            a prime: print n
    -
    <<<[->>>>>>>>+>>+<<<<<<<<<<]>>>>>>>>[-<<<<<<<<+>>>>>>>>]   cell 11 = n
    >>
    >++++++++++<
    [->->+>>+<<<[>>>-<<<[->>>>+<<<<]]>>>>[-<<<<+>>>>]<[-<<<++++++++++>[-]>+>]<<<<]
    >[-]<
    >>>[->>>+<<<]>>>
    >++++++++++<
    [->->+>>+<<<[>>>-<<<[->>>>+<<<<]]>>>>[-<<<<+>>>>]<[-<<<++++++++++>[-]>+>]<<<<]
    >[-]<                                      ones in 13 and tens in 19 and hundreds in 20
    >>>[>>>+<<<>++++++[-<++++++++>]<.[-]]      hundreds if any (z = 1)
    >>>[->+>>+<<<]>>>[-<<<+>>>]                m = z
    <<<<<<<[->>>>>+>>+<<<<<<<]>>>>>>>[-<<<<<<<+>>>>>>>]   m up by tens
    <<[[-]<<<<<>++++++[-<++++++++>]<.[-]>>>>>]  tens if they or hundreds were
    <<<<<<<<<<<>++++++[-<++++++++>]<.[-]       the ones
    >>>>>>>>>>[-]                              z = 0
    >>>>>.                                     newline
    <<<<<<<<<<<<<<<<<<<<<<<<                   back to the prime flag
  ]
  <<<<
]

// Three outlined stages where stage 0 sends straight to stage 2, which no
// pipeline schedule carries (insert-send-recv relays such values instead).
module attributes {pipe.num_stages = 3 : i64} {
  func.func @stage0_forward() attributes {pipe.segment = "forward", pipe.stage = 0 : i64} {
    %x = pipe.input 0 : tensor<4x8xf32>
    pipe.send %x to 1 tag 0 : tensor<4x8xf32>
    pipe.send %x to 2 tag 1 : tensor<4x8xf32>
    return
  }
  func.func @stage1_forward() attributes {pipe.segment = "forward", pipe.stage = 1 : i64} {
    %x = pipe.recv from 0 tag 0 : tensor<4x8xf32>
    pipe.send %x to 2 tag 2 : tensor<4x8xf32>
    return
  }
  func.func @stage2_forward() attributes {pipe.segment = "forward", pipe.stage = 2 : i64} {
    %x = pipe.recv from 1 tag 2 : tensor<4x8xf32>
    %y = pipe.recv from 0 tag 1 : tensor<4x8xf32>
    return
  }
}

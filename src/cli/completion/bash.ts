import { argCommands, flagSets, shortPairs, valueGroups } from './groups.js';
import type { CompletionSpec } from './spec.js';

/** A word for bash (and zsh): single-quoted. */
/**
 * The values of a comma-list flag (--controllers): the items not in it yet, and `-name` once the item
 * being typed starts with -. The same lines in bash and zsh, which read them alike.
 */
export const COMMA_LIST_VALUES = `    elif [[ -n $__ccm_sep ]]; then
      # A comma list: the items not in it yet; -name (all but this one) once the item starts with -.
      local have=,
      if [[ $value == *,* ]]; then
        __ccm_prefix+=\${value%,*},
        have=,\${value%,*},
      fi
      for w in "\${__ccm_vals[@]}"; do
        [[ $have == *,"$w",* || $have == *,-"$w",* ]] && continue
        if [[ \${value##*,} == -* ]]; then
          [[ $w == '*' ]] || __ccm_reply+=("-$w")
        else
          __ccm_reply+=("$w")
        fi
      done`;

export const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
const words = (list: string[]) => ` ${list.join(' ')} `;

/**
 * The bash script of `ccm completion bash`. `__ccm_candidates` finds what the word under the cursor can
 * be from the words before it, with the data above it; `_ccm` is the glue to bash's programmable
 * completion (COMP_WORDS split at `=` by COMP_WORDBREAKS, so `--provider=d` is joined back first).
 * Nothing in it runs a program: bash builtins and parameter expansion only. It runs in the user's own
 * shell, whatever its options: no function may end on a failed test (an interactive \`set -e\` would
 * close the shell), nothing reads an unset variable (\`set -u\`), and it has no pipelines (\`pipefail\`).
 * Functions whose status is not a question end with \`return 0\`.
 */
export function bashScript(spec: CompletionSpec, version: string): string {
  const { bin } = spec;
  const ids = spec.commands.map((c) => c.words.join(' '));
  const flagCases = [
    ...spec.commands.map((c) => {
      const sets = flagSets(c.flags);
      return `    ${quote(c.words.join(' '))}) __ccm_v=${quote(words(sets.value))} __ccm_b=${quote(words(sets.bool))} __ccm_m=${quote(words(sets.multiple))} __ccm_p=${quote(words(shortPairs(c.flags)))} ;;`;
    }),
    `    '') __ccm_v=' ' __ccm_b=${quote(words(flagSets(spec.rootFlags).bool))} __ccm_m=' ' __ccm_p=' ' ;;`,
    `    *) __ccm_v=' ' __ccm_b=' ' __ccm_m=' ' __ccm_p=' ' ;;`,
  ];
  const valueCases = valueGroups(spec).map(
    (g) =>
      `    ${g.keys.map(quote).join('|')})\n      __ccm_vals=(${g.items.map(quote).join(' ')})${g.list ? ' __ccm_sep=,' : ''} ;;`,
  );
  const argCases = argCommands(spec).map(({ id, args }) =>
    args === 'commands'
      ? `    ${quote(id)}) __ccm_next "$2" ;;`
      : `    ${quote(id)}) [[ -n $2 ]] || __ccm_reply=(${args.map(quote).join(' ')}) ;;`,
  );
  return `# bash completion for ${bin} ${version}, printed by \`${bin} completion bash\`.
#
# Load it into this shell:   source <(${bin} completion bash)
# and into every new one:    echo 'source <(${bin} completion bash)' >> ~/.bashrc
#
# Every command, flag and value it completes is in this file: a TAB starts no program (no ${bin}, no
# Node), so completing never reaches a network, a cloud or an API server. Print it again after an
# upgrade of ${bin} (the line in ~/.bashrc does, at each new shell).

__ccm_ids=(${ids.map(quote).join(' ')})

# __ccm_flags COMMAND: its flags that take a value (__ccm_v), that take none (__ccm_b), that may be
# given again (__ccm_m), and its short flags with their long names (__ccm_p).
__ccm_flags() {
  case $1 in
${flagCases.join('\n')}
  esac
}

# __ccm_values COMMAND FLAG: the fixed set of the flag's values (__ccm_vals), __ccm_sep=, when it takes
# a comma list of them; false when the flag takes any value.
__ccm_values() {
  __ccm_sep=
  case "$1 $2" in
${valueCases.join('\n')}
    *) return 1 ;;
  esac
}

# __ccm_args COMMAND ARGS: what the command's next argument can be, after these.
__ccm_args() {
  case $1 in
${argCases.join('\n')}
  esac
  return 0
}

# __ccm_next WORDS: the words that can follow these on the way to a command (none: the top).
__ccm_next() {
  local id rest p=\${1:+$1 }
  for id in "\${__ccm_ids[@]}"; do
    [[ $id == "$p"?* ]] || continue
    rest=\${id#"$p"}
    rest=\${rest%% *}
    [[ " \${__ccm_reply[*]} " == *" $rest "* ]] || __ccm_reply+=("$rest")
  done
  return 0
}

# __ccm_leads WORDS: whether these words are a command or lead to one; __ccm_is WORDS: a command.
__ccm_leads() {
  local id
  for id in "\${__ccm_ids[@]}"; do [[ $id == "$1" || $id == "$1 "* ]] && return 0; done
  return 1
}
__ccm_is() {
  local id
  for id in "\${__ccm_ids[@]}"; do [[ $id == "$1" ]] && return 0; done
  return 1
}

# __ccm_candidates WORD...: what the last word can be, after the words before it (${bin} first).
# Sets __ccm_reply (not yet matched against the word), __ccm_prefix (what of the word comes before
# them: --flag= or a list's first items) and __ccm_files (the flag takes a file or any value).
__ccm_candidates() {
  local n=$# i w cmd= path= expect= dashdash= value
  local cur=\${!n}
  local -a args=() used=()
  __ccm_reply=() __ccm_prefix= __ccm_files=
  __ccm_flags ''
  for ((i = 2; i < n; i++)); do
    w=\${!i}
    if [[ -n $expect ]]; then
      expect=
    elif [[ -z $dashdash && $w == -- ]]; then
      dashdash=1
    elif [[ -z $dashdash && $w == -?* ]]; then
      used+=("\${w%%=*}")
      [[ $w != *=* && $__ccm_v == *" $w "* ]] && expect=$w
    elif [[ \${#args[@]} -eq 0 ]] && __ccm_leads "\${path:+$path }$w"; then
      path=\${path:+$path }$w
      if __ccm_is "$path"; then
        cmd=$path
        __ccm_flags "$cmd"
      fi
    else
      args+=("$w")
    fi
  done
  if [[ -n $expect ]]; then
    value=$cur
  elif [[ -z $dashdash && $cur == -?*=* && $__ccm_v == *" \${cur%%=*} "* ]]; then
    expect=\${cur%%=*}
    value=\${cur#*=}
    __ccm_prefix=$expect=
  fi
  if [[ -n $expect ]]; then
    if ! __ccm_values "$cmd" "$expect"; then
      __ccm_files=1
${COMMA_LIST_VALUES}
    else
      __ccm_reply=("\${__ccm_vals[@]}")
    fi
    return 0
  fi
  if [[ -z $dashdash && $cur != -* ]]; then
    # A topic's commands, or a command's arguments: words before flags.
    [[ \${#args[@]} -eq 0 ]] && __ccm_next "$path"
    [[ -n $cmd && \${#__ccm_reply[@]} -eq 0 ]] && __ccm_args "$cmd" "\${args[*]}"
    [[ \${#__ccm_reply[@]} -gt 0 || -z $cmd$path ]] && return 0
  fi
  # After --, or in a topic that is no command: nothing.
  [[ -z $dashdash && ( -n $cmd || -z $path ) ]] || return 0
  # The flags not given yet: each once (its short and long names, --x and --no-x are one flag).
  local f u skip
  for f in $__ccm_v $__ccm_b; do
    skip=
    if [[ $__ccm_m != *" $f "* ]]; then
      for u in "\${used[@]}"; do
        if [[ $u == "$f" || $u == "--no-\${f#--}" || $f == "--no-\${u#--}" || $__ccm_p == *" $u:$f "* || $__ccm_p == *" $f:$u "* ]]; then
          skip=1
          break
        fi
      done
    fi
    [[ -n $skip ]] || __ccm_reply+=("$f")
  done
  return 0
}

_ccm() {
  local i w joined= last
  local -a words=()
  local __ccm_prefix __ccm_files __ccm_sep
  local -a __ccm_reply=() __ccm_vals=()
  local __ccm_v __ccm_b __ccm_m __ccm_p
  # The words up to the cursor, \`--flag=value\` and \`-o=value\` as one word (bash splits it at the =).
  for ((i = 0; i <= COMP_CWORD && i < \${#COMP_WORDS[@]}; i++)); do
    w=\${COMP_WORDS[i]}
    last=$((\${#words[@]} - 1))
    if [[ $w == = && $last -gt 0 && \${words[last]} == -[!=]* && \${words[last]} != *=* ]]; then
      words[last]+==
      joined=1
    elif [[ -n $joined ]]; then
      words[last]+=$w
      joined=
    else
      words+=("$w")
    fi
  done
  ((COMP_CWORD < \${#COMP_WORDS[@]})) || words+=('')
  # || : as well: whatever fails in there is no command of the user's shell to stop at (set -e).
  __ccm_candidates "\${words[@]}" || :
  if [[ -n $__ccm_files ]]; then
    # The shell's own completion of file names (a kubeconfig, a cloud.conf, a folder).
    compopt -o default 2>/dev/null || :
    COMPREPLY=()
    return
  fi
  # The text bash replaces: the word after its last break (=), of the whole word typed.
  local typed=\${words[\${#words[@]}-1]} replaced=\${COMP_WORDS[COMP_CWORD]}
  [[ $replaced == = ]] && replaced=
  local keep=$((\${#typed} - \${#replaced})) c
  COMPREPLY=()
  for c in "\${__ccm_reply[@]}"; do
    c=$__ccm_prefix$c
    [[ $c == "$typed"* ]] || continue
    c=\${c:keep}
    # --controllers \\* is no glob on the line.
    COMPREPLY+=("\${c//\\*/\\\\*}")
  done
  # A template's text follows -o jsonpath= at once.
  [[ \${#COMPREPLY[@]} -eq 1 && \${COMPREPLY[0]} == *= ]] && { compopt -o nospace 2>/dev/null || :; }
  return 0
}

complete -F _ccm ${bin}
`;
}

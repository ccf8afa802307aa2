//! Prompts (docs/mcp.md#prompts): the investigations users run most, each a template that
//! tells the assistant which tools to call with which arguments, in English or in French as
//! the tools are. A prompt fetches nothing itself and costs no call of the quota; it is
//! listed when the POST may call every tool it names (toolsets and scopes).

use netops_shared::lang::Lang;
use netops_shared::window::PERIODS;
use serde_json::{Map, Value, json};

/// Text in English and in French.
#[derive(Debug, Clone, Copy)]
pub struct Text {
    pub en: &'static str,
    pub fr: &'static str,
}

impl Text {
    pub fn en_or_fr(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.en,
            Lang::Fr => self.fr,
        }
    }
}

/// An argument of a prompt: a time window (one of the API's periods) or a free value.
#[derive(Debug)]
pub struct Arg {
    pub name: &'static str,
    pub description: Text,
    /// The value when the client gives none; no default: the argument is required.
    pub default: Option<&'static str>,
    pub period: bool,
}

/// A value of a step's argument: a prompt argument, or a fixed value.
#[derive(Debug)]
pub enum Source {
    Arg(&'static str),
    Fixed(&'static str),
    /// A value the assistant reads from an earlier step's answer (said in words).
    Earlier(Text),
}

/// One tool call the prompt asks for, and why.
#[derive(Debug)]
pub struct Step {
    pub tool: &'static str,
    pub args: &'static [(&'static str, Source)],
    pub why: Text,
}

#[derive(Debug)]
pub struct Prompt {
    pub name: &'static str,
    pub title: Text,
    pub description: Text,
    pub args: &'static [Arg],
    /// What to find out, with `{argument}` placeholders.
    pub goal: Text,
    pub steps: &'static [Step],
    /// What the answer should hold.
    pub answer: Text,
}

const HOSTNAME: Arg = Arg {
    name: "hostname",
    description: Text {
        en: "Host name of the machine, as list_machines gives it.",
        fr: "Nom d'hôte de la machine, tel que list_machines le donne.",
    },
    default: None,
    period: false,
};

const fn period(default: &'static str) -> Arg {
    Arg {
        name: "period",
        description: Text {
            en: "Window to look at: 1h, 3h, 6h, 12h, 24h, 7d or 30d.",
            fr: "Fenêtre à examiner : 1h, 3h, 6h, 12h, 24h, 7d ou 30d.",
        },
        default: Some(default),
        period: true,
    }
}

const THE_MACHINE: Text = Text {
    en: "the alert's machine",
    fr: "la machine de l'alerte",
};

pub const PROMPTS: &[Prompt] = &[
    Prompt {
        name: "slow_network",
        title: Text {
            en: "Why is this machine's network slow?",
            fr: "Pourquoi le réseau de cette machine est-il lent ?",
        },
        description: Text {
            en: "Diagnoses a machine's slow network from its NetDiag measures, its events and its failed connections.",
            fr: "Diagnostique la lenteur réseau d'une machine par ses mesures NetDiag, ses événements et ses connexions en échec.",
        },
        args: &[HOSTNAME, period("24h")],
        goal: Text {
            en: "Find out why the network of machine {hostname} is slow over the last {period}.",
            fr: "Trouve pourquoi le réseau de la machine {hostname} est lent sur la période {period}.",
        },
        steps: &[
            Step {
                tool: "get_machine",
                args: &[("hostname", Source::Arg("hostname"))],
                why: Text {
                    en: "is it online, and when did its agent last report?",
                    fr: "est-elle en ligne, et quand son agent a-t-il répondu pour la dernière fois ?",
                },
            },
            Step {
                tool: "get_netdiag_summary",
                args: &[
                    ("hostname", Source::Arg("hostname")),
                    ("period", Source::Arg("period")),
                ],
                why: Text {
                    en: "the NetDiag verdicts and measures (latency, loss, Wi-Fi, VPN) over the window.",
                    fr: "les verdicts et mesures NetDiag (latence, pertes, Wi-Fi, VPN) sur la fenêtre.",
                },
            },
            Step {
                tool: "list_netdiag_events",
                args: &[
                    ("hostname", Source::Arg("hostname")),
                    ("period", Source::Arg("period")),
                    ("source", Source::Fixed("verdict,wlan,vpn,wan,tcpfail")),
                ],
                why: Text {
                    en: "what degraded, and when.",
                    fr: "ce qui s'est dégradé, et quand.",
                },
            },
            Step {
                tool: "list_blocked_flows",
                args: &[
                    ("machine", Source::Arg("hostname")),
                    ("period", Source::Arg("period")),
                ],
                why: Text {
                    en: "connections refused, timed out or blocked.",
                    fr: "les connexions refusées, expirées ou bloquées.",
                },
            },
            Step {
                tool: "list_flows",
                args: &[
                    ("machine", Source::Arg("hostname")),
                    ("period", Source::Arg("period")),
                ],
                why: Text {
                    en: "which processes use the network, and toward where.",
                    fr: "quels processus utilisent le réseau, et vers où.",
                },
            },
        ],
        answer: Text {
            en: "Answer with the most likely cause, the evidence (times and values) and what to check next.",
            fr: "Réponds par la cause la plus probable, les preuves (heures et valeurs) et ce qu'il faut vérifier ensuite.",
        },
    },
    Prompt {
        name: "what_changed",
        title: Text {
            en: "What changed recently?",
            fr: "Qu'est-ce qui a changé récemment ?",
        },
        description: Text {
            en: "Lists what changed over a recent window: alerts, account changes, security incidents, firewall events, planned maintenance.",
            fr: "Liste ce qui a changé sur une fenêtre récente : alertes, changements de comptes, incidents de sécurité, événements pare-feu, maintenances prévues.",
        },
        args: &[period("1h")],
        goal: Text {
            en: "Find out what changed in the account over the last {period}.",
            fr: "Trouve ce qui a changé dans le compte sur la période {period}.",
        },
        steps: &[
            Step {
                tool: "list_alerts",
                args: &[
                    ("status", Source::Fixed("all")),
                    ("period", Source::Arg("period")),
                ],
                why: Text {
                    en: "alerts open now or opened in the window (monitors, SIEM, NetDiag).",
                    fr: "les alertes ouvertes ou apparues dans la fenêtre (moniteurs, SIEM, NetDiag).",
                },
            },
            Step {
                tool: "list_account_changes",
                args: &[("period", Source::Arg("period"))],
                why: Text {
                    en: "accounts and groups created, changed or deleted.",
                    fr: "les comptes et groupes créés, modifiés ou supprimés.",
                },
            },
            Step {
                tool: "list_security_incidents",
                args: &[("period", Source::Arg("period"))],
                why: Text {
                    en: "security incidents of the window.",
                    fr: "les incidents de sécurité de la fenêtre.",
                },
            },
            Step {
                tool: "list_firewall_events",
                args: &[("period", Source::Arg("period"))],
                why: Text {
                    en: "configuration changes and events of the firewalls.",
                    fr: "les changements de configuration et événements des pare-feu.",
                },
            },
            Step {
                tool: "list_maintenance_windows",
                args: &[],
                why: Text {
                    en: "planned work that explains some of the changes.",
                    fr: "les travaux prévus qui expliquent certains changements.",
                },
            },
        ],
        answer: Text {
            en: "Answer with a timeline of the changes, newest first, each with its source, and say which ones planned maintenance explains.",
            fr: "Réponds par une chronologie des changements, du plus récent au plus ancien, chacun avec sa source, et dis lesquels une maintenance prévue explique.",
        },
    },
    Prompt {
        name: "triage_alert",
        title: Text {
            en: "Is this alert worth waking someone?",
            fr: "Cette alerte vaut-elle de réveiller quelqu'un ?",
        },
        description: Text {
            en: "Weighs one alert: its severity, whether it is acknowledged, planned maintenance, its history and the state of its machine.",
            fr: "Évalue une alerte : sa gravité, son acquittement, les maintenances prévues, son historique et l'état de sa machine.",
        },
        args: &[Arg {
            name: "alert_id",
            description: Text {
                en: "Identifier of the alert, as list_alerts gives it.",
                fr: "Identifiant de l'alerte, tel que list_alerts le donne.",
            },
            default: None,
            period: false,
        }],
        goal: Text {
            en: "Decide whether alert {alert_id} is worth waking the on-call engineer.",
            fr: "Décide si l'alerte {alert_id} vaut de réveiller l'ingénieur d'astreinte.",
        },
        steps: &[
            Step {
                tool: "list_alerts",
                args: &[("status", Source::Fixed("open"))],
                why: Text {
                    en: "find the alert: its origin, severity, machine or monitor, start, and whether someone acknowledged it.",
                    fr: "trouve l'alerte : son origine, sa gravité, sa machine ou son moniteur, son début, et si quelqu'un l'a acquittée.",
                },
            },
            Step {
                tool: "list_maintenance_windows",
                args: &[],
                why: Text {
                    en: "is its machine in planned maintenance now?",
                    fr: "sa machine est-elle en maintenance prévue en ce moment ?",
                },
            },
            Step {
                tool: "list_alerts",
                args: &[
                    ("status", Source::Fixed("all")),
                    ("period", Source::Fixed("7d")),
                ],
                why: Text {
                    en: "has it fired and resolved by itself before (flapping)?",
                    fr: "s'est-elle déjà déclenchée puis résolue d'elle-même (battement) ?",
                },
            },
            Step {
                tool: "get_machine",
                args: &[("hostname", Source::Earlier(THE_MACHINE))],
                why: Text {
                    en: "is the machine online, and what does it serve?",
                    fr: "la machine est-elle en ligne, et que sert-elle ?",
                },
            },
        ],
        answer: Text {
            en: "Answer yes or no first, then why (impact, duration, history), and what the on-call engineer should do first.",
            fr: "Réponds d'abord oui ou non, puis pourquoi (impact, durée, historique), et ce que l'ingénieur d'astreinte doit faire en premier.",
        },
    },
];

const INTRO: Text = Text {
    en: "Call these tools of the netops server in this order, with these arguments:",
    fr: "Appelle ces outils du serveur netops dans cet ordre, avec ces arguments :",
};

const HONEST: Text = Text {
    en: "Rely only on what the tools answer; if a tool answers an error (isError), say so and go on with the others.",
    fr: "Ne t'appuie que sur ce que répondent les outils ; si un outil répond une erreur (isError), dis-le et continue avec les autres.",
};

pub fn find(name: &str) -> Option<&'static Prompt> {
    PROMPTS.iter().find(|p| p.name == name)
}

impl Prompt {
    /// The prompt as `prompts/list` shows it.
    pub fn def(&self, lang: Lang) -> Value {
        let arguments: Vec<Value> = self
            .args
            .iter()
            .map(|a| {
                json!({
                    "name": a.name,
                    "description": a.description.en_or_fr(lang),
                    "required": a.default.is_none(),
                })
            })
            .collect();
        json!({
            "name": self.name,
            "title": self.title.en_or_fr(lang),
            "description": self.description.en_or_fr(lang),
            "arguments": arguments,
        })
    }

    /// The prompt's text for `arguments`, or why they do not fit (-32602).
    pub fn render(&self, lang: Lang, arguments: &Map<String, Value>) -> Result<String, String> {
        if let Some(unknown) = arguments
            .keys()
            .find(|k| !self.args.iter().any(|a| a.name == k.as_str()))
        {
            return Err(format!(
                "unknown argument '{unknown}' for prompt '{}'",
                self.name
            ));
        }
        let mut values: Vec<(&str, String)> = Vec::new();
        for arg in self.args {
            let given = arguments.get(arg.name).filter(|v| !v.is_null());
            let value = match (given, arg.default) {
                (Some(Value::String(s)), _) if !s.trim().is_empty() && s.len() <= 200 => {
                    s.trim().to_owned()
                }
                (Some(_), _) => {
                    return Err(format!(
                        "argument '{}' must be a non-empty string of at most 200 bytes",
                        arg.name
                    ));
                }
                (None, Some(default)) => default.to_owned(),
                (None, None) => return Err(format!("missing required argument '{}'", arg.name)),
            };
            if arg.period && !PERIODS.iter().any(|(p, _)| *p == value) {
                let periods: Vec<&str> = PERIODS.iter().map(|(p, _)| *p).collect();
                return Err(format!(
                    "argument '{}' must be one of {}",
                    arg.name,
                    periods.join(", ")
                ));
            }
            values.push((arg.name, value));
        }
        let value = |name: &str| {
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or_default()
        };
        let mut goal = self.goal.en_or_fr(lang).to_owned();
        for (name, v) in &values {
            goal = goal.replace(&format!("{{{name}}}"), v);
        }
        let mut text = format!("{goal}\n\n{}\n", INTRO.en_or_fr(lang));
        for (i, step) in self.steps.iter().enumerate() {
            let args: Map<String, Value> = step
                .args
                .iter()
                .map(|(k, from)| {
                    let v = match from {
                        Source::Arg(a) => value(a).to_owned(),
                        Source::Fixed(f) => (*f).to_owned(),
                        Source::Earlier(what) => format!("<{}>", what.en_or_fr(lang)),
                    };
                    ((*k).to_owned(), Value::String(v))
                })
                .collect();
            text.push_str(&format!(
                "{}. {} {} — {}\n",
                i + 1,
                step.tool,
                Value::Object(args),
                step.why.en_or_fr(lang)
            ));
        }
        text.push_str(&format!(
            "\n{} {}",
            HONEST.en_or_fr(lang),
            self.answer.en_or_fr(lang)
        ));
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools;

    /// Every step names a tool of the catalog with arguments of its input schema, every
    /// fixed value admitted by the schema's enum when it has one, and every placeholder of
    /// the goal is an argument.
    #[test]
    fn every_step_calls_a_real_tool_with_its_arguments() {
        let doc = netops_api::openapi(Default::default());
        let catalog = tools::build(&doc, Lang::En);
        for prompt in PROMPTS {
            for step in prompt.steps {
                let tool = catalog
                    .iter()
                    .find(|t| t.name() == step.tool)
                    .unwrap_or_else(|| panic!("{}: no tool {}", prompt.name, step.tool));
                let props = &tool.def["inputSchema"]["properties"];
                for (name, from) in step.args {
                    let schema = &props[*name];
                    assert!(
                        schema.is_object(),
                        "{}: {} has no {name}",
                        prompt.name,
                        step.tool
                    );
                    if let (Source::Fixed(v), Some(allowed)) = (from, schema["enum"].as_array()) {
                        assert!(allowed.contains(&json!(v)), "{}: {name}={v}", prompt.name);
                    }
                    if let Source::Arg(a) = from {
                        assert!(
                            prompt.args.iter().any(|p| p.name == *a),
                            "{}: {a}",
                            prompt.name
                        );
                    }
                }
                for required in tool.def["inputSchema"]["required"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    assert!(
                        step.args.iter().any(|(n, _)| json!(n) == *required),
                        "{}: {} needs {required}",
                        prompt.name,
                        step.tool
                    );
                }
            }
            for lang in [Lang::En, Lang::Fr] {
                let args: Map<String, Value> = prompt
                    .args
                    .iter()
                    .map(|a| (a.name.to_owned(), json!(a.default.unwrap_or("X-1"))))
                    .collect();
                let text = prompt.render(lang, &args).expect("renders");
                assert!(!text.contains('{') || text.contains("{\""), "{text}");
                assert!(
                    !text.contains("{hostname}") && !text.contains("{period}"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn arguments_are_checked_and_values_escaped() {
        let slow = find("slow_network").expect("prompt");
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(
            slow.render(Lang::En, &args(json!({}))).is_err(),
            "hostname is required"
        );
        assert!(
            slow.render(Lang::En, &args(json!({"hostname": "a", "x": "1"})))
                .is_err()
        );
        assert!(
            slow.render(Lang::En, &args(json!({"hostname": "a", "period": "2h"})))
                .is_err()
        );
        assert!(
            slow.render(Lang::En, &args(json!({"hostname": 7})))
                .is_err()
        );
        let text = slow
            .render(Lang::En, &args(json!({"hostname": "PC \"42\""})))
            .expect("renders");
        assert!(
            text.contains(r#"get_machine {"hostname":"PC \"42\""}"#),
            "{text}"
        );
        assert!(
            text.contains(r#""period":"24h""#),
            "the default window: {text}"
        );
        let fr = slow
            .render(Lang::Fr, &args(json!({"hostname": "PC-1", "period": "1h"})))
            .expect("renders");
        assert!(
            fr.starts_with("Trouve pourquoi le réseau de la machine PC-1"),
            "{fr}"
        );
    }
}

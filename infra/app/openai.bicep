// Azure OpenAI with one chat deployment, reached with Entra ID only (no API key), and the
// Cognitive Services OpenAI User role for the app's identity.
param location string
param tags object
param name string
param principalId string
param modelName string
param modelVersion string
param capacity int

resource account 'Microsoft.CognitiveServices/accounts@2024-10-01' = {
  name: name
  location: location
  tags: tags
  kind: 'OpenAI'
  sku: { name: 'S0' }
  //checkov:skip=CKV_AZURE_238:The account calls no other service, so it needs no identity of its own; the app's identity calls it.
  //checkov:skip=CKV_AZURE_134:Without a virtual network the app reaches the account over its public endpoint; every call still needs an Entra ID token (local auth is off).
  properties: {
    customSubDomainName: name // Entra ID tokens are accepted only on a custom subdomain
    disableLocalAuth: true
    publicNetworkAccess: 'Enabled'
  }
}

resource chat 'Microsoft.CognitiveServices/accounts/deployments@2024-10-01' = {
  parent: account
  name: modelName
  sku: {
    name: 'GlobalStandard'
    capacity: capacity
  }
  properties: {
    model: {
      format: 'OpenAI'
      name: modelName
      version: modelVersion
    }
  }
}

// Cognitive Services OpenAI User: chat completions, nothing administrative.
var openAIUserRole = '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'
resource openAIUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(account.id, principalId, openAIUserRole)
  scope: account
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', openAIUserRole)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

output endpoint string = account.properties.endpoint
output chatDeploymentName string = chat.name
